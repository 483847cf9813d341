"""An existing cluster as an evidence source. The run owns none of its origins, and a proxy only when
it started one itself (``--proxy-listen``): then that proxy's log (the run's mitmdump's flow log, or
a vendor proxy's access log, in any format ``accesslogs`` reads) shows each node's route. Nothing a
simulator records exists here (``Evidence.hosts`` stays None), so each check that needs it reports ``skipped``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proxyfleet.harness.conformance.checks import PullEvidence, TrafficEvidence
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.evidence import Evidence, ProbedDestination, Step
from proxyfleet.harness.conformance.expectations import Route
from proxyfleet.harness.conformance.probe import PullResult
from proxyfleet.harness.lab.accesslogs import read_file
from proxyfleet.harness.lab.vendor import parse_listen, wait_until_closed
from proxyfleet.simulators.network import ClusterEndpoint
from proxyfleet.simulators.proxy.runner import read_flow_log

RUN_PROXY = "the run's proxy"  # the proxy every flow of ``pull_flows`` was logged by


class ClusterEvidence:
    """The log of the proxy the run started, if any; ``api_hosts``: where the nodes reach the API
    server (the cluster's internal API host, when it publishes one)."""

    def __init__(self, target: ClusterTarget, api_hosts: tuple[str, ...] = ()) -> None:
        self.target = target
        self.api_hosts = api_hosts
        self._listen = parse_listen(target.proxy_listen, ClusterEndpoint) if target.proxy_listen else None

    @property
    def routes_observed(self) -> bool:
        return self.target.proxy_flow_log is not None or self.target.proxy_access_log is not None

    def destinations(self) -> list[ProbedDestination]:
        return self.target.destinations()

    def probe_target(self, destination: ProbedDestination) -> tuple[str, str | None]:
        return destination.text, None  # a real destination is fetched as the user named it

    def positions(self) -> dict[str, int]:
        return {}

    def activity(self, address: str) -> int | None:
        return None  # a real host offers no such count: every look is a new one

    def listening(self) -> set[str] | None:
        return None

    def anyone_down(self, excluded: set[str]) -> bool:
        return False  # a node that is down shows as unreachable to the probes

    def down_note(self, address: str) -> str:
        return ""  # a real host that does not answer says nothing more

    def lab_fault(self, address: str) -> str:
        return ""  # a real cluster's nodes are not the lab's to fail

    async def settle(self) -> None:
        """A vendor's proxy may log a tunnel only when it closes (Squid): wait, with a deadline,
        until no connection to it is open (one that stays open: judge what is logged). The run's
        mitmdump logs as it goes."""
        if self.target.proxy_access_log is not None and self._listen is not None:
            await wait_until_closed([self._listen])

    def _flows(self) -> list[dict[str, Any]]:
        if self.target.proxy_access_log is not None:
            return read_file(self.target.proxy_access_log, self.target.proxy_log_format).records
        return read_flow_log(self.target.proxy_flow_log) if self.target.proxy_flow_log is not None else []

    def marks(self) -> dict[str, int]:
        return {"run-proxy": len(self._flows())}

    def read(self, step: Step, marks: dict[str, int]) -> Evidence:
        """The run's proxy's flows by node: since the marks (``pull_flows``) and since the step
        began (``step_flows``)."""
        evidence = Evidence(routes_observed=self.routes_observed)
        flows = self._flows()
        for flow in flows[marks.get("run-proxy", 0):]:
            evidence.pull_flows.setdefault(str(flow["client"]), []).append((RUN_PROXY, flow))
        for flow in flows:
            # (a log without times — a format of the user's with no time group — says nothing of when)
            if flow.get("time") and dt.datetime.fromisoformat(str(flow["time"])) >= step.started:
                evidence.step_flows.setdefault(str(flow["client"]), []).append(flow)
        return evidence

    def traffic(self, address: str, destination: ProbedDestination, route: Route, result: PullResult,
                evidence: Evidence, probe: str | None = None) -> TrafficEvidence:
        """Judged by the run's proxy's log where there is one, else by outcome only. A direct route
        to an internet destination is the network's to allow or refuse."""
        network_decides = destination.internet and route.proxy is None
        if not evidence.routes_observed:
            return TrafficEvidence(PullEvidence(result.ok, result.output), "outcome", network_decides=network_decides)
        flows = tuple((True, f) for _, f in evidence.pull_flows.get(address, []) if f.get("host") == destination.name)
        return TrafficEvidence(PullEvidence(result.ok, result.output, flows), "run-proxy",
                               through_run_proxy=self.target.is_run_proxy(route.proxy),
                               network_decides=network_decides)

    async def lags(self, since: float) -> dict[str, dict[str, float]]:
        return {}  # the run's proxy runs on the judge's own process (a vendor's is not the run's to measure)

    def readable_logs(self) -> list[tuple[str, str]]:
        return []  # the operator's own logs are the cluster's (its credentials check reads the API)
