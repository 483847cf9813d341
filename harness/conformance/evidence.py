"""What a step leaves behind, read once per step, through one seam with two sources:

* ``LabEvidence``: the embedded lab's proxies' flow logs, the origins' access logs and the
  firewall's refusals since the step began, grouped by the node they came from — and, through the
  lab's simulators, what no real host shows (``LAB_ONLY``);
* ``ClusterEvidence``: an existing cluster judged from outside, whose origins are not the run's,
  nor its proxy unless the run started it (``--proxy-listen``: then that proxy's flow log). The
  judge reads the API and the nodes over SSH, and each check that needs more reports ``skipped``
  with the reason (``LAB_ONLY``, or why a traffic outcome proves no route), never ``passed``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.harness.conformance.expectations import Expected
from proxyfleet.harness.conformance.results import CheckResult
from proxyfleet.harness.lab import Lab
from proxyfleet.harness.lab.squidlog import read_native_file
from proxyfleet.harness.lab.vendor import VendorProxy, wait_until_closed
from proxyfleet.simulators.network import Endpoint
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTERNET_REGISTRY, INTRANET_REGISTRY
from proxyfleet.simulators.proxy.runner import ProxyServer, read_flow_log

# The checks only the lab's simulators can feed, and why a real cluster cannot (shown as the
# reason of each ``skipped`` result).
LAB_ONLY: dict[str, str] = {
    "service-environment": "needs lab evidence: a service's environment is not observable on Windows",
    "firewall": "needs lab evidence: the egress firewall's refusals are the lab network's record",
    "reboots": "needs lab evidence: a host shows only its last boot time, not how many reboots a step took",
    "drained-while-down": "needs lab evidence: the exact moments each reboot went down and came back",
    "drained": "needs lab evidence: the pods on the node at the moment it went down",
    "disruption-budget": "needs lab evidence: the exact moments each reboot went down and came back",
}
UNCONFIGURED = Expected(dict.fromkeys(PROXY_VARIABLES), {}, {})
# The destinations a step's traffic checks use: the two registries pulled from, the plain-HTTP site.
PROBED_HOSTS = (INTERNET_REGISTRY, INTRANET_REGISTRY, INTERNET_HTTP_SITE)


@dataclass
class Evidence:
    """What the proxies and origins saw during a step, grouped by node address."""

    pull_flows: dict[str, list[tuple[ProxyServer | VendorProxy, dict[str, Any]]]] = field(default_factory=dict)
    step_flows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # since the step began
    origin_sources: dict[str, dict[str, int]] = field(default_factory=dict)  # host -> source -> requests
    violations: dict[str, list[str]] = field(default_factory=dict)  # source -> refused origins
    # False: no log of any proxy or origin is the run's (traffic checks judge outcomes only)
    routes_observed: bool = True
    # An existing cluster's run: the flows of the proxy the run started, by node, since the marks
    run_proxy_flows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class Step:
    """One administrator action and what the nodes showed after it."""

    name: str
    started: dt.datetime
    members: list[str]  # node addresses judged as configured instances
    deconfigured: list[str]
    boots: dict[str, int]
    outages: dict[str, int]
    violations: int
    before: dict[str, Expected]
    root_removals: dict[str, int]  # how many removals each node's Root store had seen before the step
    expected: Expected = UNCONFIGURED
    drifted: set[str] = field(default_factory=set)  # nodes changed out of band in this step
    absent: list[str] = field(default_factory=list)  # instances off the network for the whole step
    rekeyed: list[str] = field(default_factory=list)  # instances whose SSH host key changed: to be refused
    stuck: list[str] = field(default_factory=list)  # instances whose reboot never ends: to be reported
    # (node, revision) claims of "applied" already on the Nodes when the step began
    claims_before: set[tuple[str, str]] = field(default_factory=set)
    converged: dict[str, float] = field(default_factory=dict)  # address -> seconds after the action
    results: list[CheckResult] = field(default_factory=list)


class LabEvidence:
    """Reads the lab's logs: ``marks()`` before the pulls, ``read()`` after them."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        # the lab's probed destinations and a customer's own (repro --destination)
        self.hosts = tuple(dict.fromkeys([*PROBED_HOSTS, *(d.host for d in lab.settings.destinations)]))

    def proxies(self) -> list[ProxyServer | VendorProxy]:
        return [p for p in (self.lab.proxy, self.lab.proxy2) if p is not None]

    async def settle(self) -> None:
        """Wait until a vendor proxy has logged the connections so far (Squid writes a tunnel's
        line when it closes); the lab's own proxy logs as it goes."""
        vendor = self.lab.vendor_proxy
        if vendor is not None and vendor.running:
            await vendor.settle()

    def marks(self) -> dict[str, int]:
        """Where each log ends now (what comes after belongs to the pulls and fetches that follow)."""
        marks = {f"proxy:{id(p)}": len(p.flows()) for p in self.proxies()}
        for host in self.hosts:
            marks[f"origin:{host}"] = len(self.lab.origins.access_log(host))
        return marks

    def read(self, step: Step, marks: dict[str, int]) -> Evidence:
        """Each log read once, grouped by the node it came from."""
        evidence = Evidence()
        for proxy in self.proxies():
            flows = proxy.flows()
            for flow in flows[marks.get(f"proxy:{id(proxy)}", 0):]:
                evidence.pull_flows.setdefault(str(flow["client"]), []).append((proxy, flow))
            for flow in flows:
                if dt.datetime.fromisoformat(str(flow["time"])) >= step.started:
                    evidence.step_flows.setdefault(str(flow["client"]), []).append(flow)
        for host in self.hosts:
            seen = evidence.origin_sources.setdefault(host, {})
            for record in self.lab.origins.access_log(host)[marks[f"origin:{host}"]:]:
                seen[record.source] = seen.get(record.source, 0) + 1
        for violation in self.lab.origins.violations()[step.violations:]:
            evidence.violations.setdefault(violation.source, []).append(violation.origin)
        return evidence


class ClusterEvidence:
    """An existing cluster's evidence source: the run owns no origin, and a proxy only when it
    started one itself (``flow_log``: that proxy's flow log, read like the lab's); the API and SSH
    probes are the judge's own."""

    hosts: tuple[str, ...] = ()

    def __init__(self, flow_log: Path | None = None, access_log: Path | None = None,
                 listen: Endpoint | None = None) -> None:
        self.flow_log = flow_log
        self.access_log = access_log  # a vendor's proxy the run started: its native log
        self.listen = listen

    async def settle(self) -> None:
        """A vendor's proxy may log a tunnel only when it closes (Squid): wait, with a deadline,
        until no connection to it is open (one that stays open: judge what is logged). The run's
        mitmdump logs as it goes."""
        if self.access_log is not None and self.listen is not None:
            await wait_until_closed([self.listen])

    def _flows(self) -> list[dict[str, Any]]:
        if self.access_log is not None:
            return read_native_file(self.access_log)
        return read_flow_log(self.flow_log) if self.flow_log is not None else []

    def marks(self) -> dict[str, int]:
        return {"run-proxy": len(self._flows())}

    def read(self, step: Step, marks: dict[str, int]) -> Evidence:
        """The run's proxy's flows by node: since the marks (``run_proxy_flows``) and since the
        step began (``step_flows``)."""
        evidence = Evidence(routes_observed=self.flow_log is not None or self.access_log is not None)
        flows = self._flows()
        for flow in flows[marks.get("run-proxy", 0):]:
            evidence.run_proxy_flows.setdefault(str(flow["client"]), []).append(flow)
        for flow in flows:
            if dt.datetime.fromisoformat(str(flow["time"])) >= step.started:
                evidence.step_flows.setdefault(str(flow["client"]), []).append(flow)
        return evidence
