"""What the judge may know of a step beyond the API and its SSH probes, through one seam.

The judge reads the cluster's API and probes the nodes over SSH itself, the same way on the lab and
on an existing cluster. Everything else comes from an ``EvidenceSource``, of which there are two:

* ``ClusterEvidence`` (``clusterevidence``): an existing cluster judged from outside. Its origins
  are not the run's, nor its proxy unless the run started one (then that proxy's log);
* ``LabEvidence`` (``labevidence``): the embedded lab, which adds what only a simulator can show —
  every proxy's and origin's log, the egress firewall's refusals, the services' process
  environments, each reboot's exact edges, the Root stores' removal history, the API server's
  record of evictions.

A source that cannot show something says so by leaving it out (``Evidence.hosts`` is None, a
traffic outcome is "outcome only"): the check that needs it reports ``skipped`` with the reason
(``LAB_ONLY``), never ``passed``. The checks themselves are pure functions (``checks``).
"""

from __future__ import annotations

import datetime as dt
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Protocol

from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.core.imagereference import parse_image
from proxyfleet.harness.conformance.checks import TrafficEvidence
from proxyfleet.harness.conformance.deadlines import Deadline
from proxyfleet.harness.conformance.expectations import Expected, Route
from proxyfleet.harness.conformance.probe import PullResult
from proxyfleet.harness.conformance.results import CheckResult
from proxyfleet.harness.conformance.routing import ProbeEvidence
from proxyfleet.simulators.egress.records import EgressRecord

# The checks only the lab's simulators can feed, and why a real cluster cannot (shown as the
# reason of each ``skipped`` result).
LAB_ONLY: dict[str, str] = {
    "service-environment": "needs lab evidence: a service's environment is not observable on Windows",
    "firewall": "needs lab evidence: the egress firewall's refusals are the lab network's record",
    "unit-environment": "needs lab evidence: what a unit's files give it at the next boot is the lab's model of "
                        "systemd reading them",
    # A real host's System event log does record each boot (Kernel-General event 12); the probes
    # read only its last boot time, which cannot count them.
    "reboots": "needs lab evidence: the probes read a host's last boot time, which cannot tell how many reboots "
               "a step took",
    "drained-while-down": "needs lab evidence: the exact moments each reboot went down and came back",
    "drained": "needs lab evidence: the pods on the node at the moment it went down",
    "disruption-budget": "needs lab evidence: the exact moments each reboot went down and came back",
}
UNCONFIGURED = Expected(dict.fromkeys(PROXY_VARIABLES), {}, {})
# The traffic checks every member feeds after each step, and the option that names an existing
# cluster's destination for each (without one the check is skipped, saying so).
TRAFFIC_CHECKS: dict[str, str] = {"pull-internet": "--internet-image", "pull-intranet": "--intranet-image",
                                  "fetch-http": "--http-url"}


@dataclass(frozen=True)
class ProbedDestination:
    """Somewhere every member sends traffic after each step: an image pulled by containerd or a URL
    fetched by curl.exe. ``internet``: only a proxy may reach it (the network, not the cluster,
    decides whether a node may reach it directly)."""

    check: str  # the check it feeds: one of TRAFFIC_CHECKS, or "destinations" (a customer's own)
    text: str  # an image reference or a URL
    image: bool
    internet: bool

    @property
    def host(self) -> str:
        """Where the node's client connects: a registry (containerd's reading of the reference) or
        the URL's host, with its port if it names one."""
        if self.image:
            return parse_image(self.text).host
        return urllib.parse.urlsplit(self.text).netloc.rpartition("@")[2]

    @property
    def name(self) -> str:
        """The host without a port, as proxies and origins log it."""
        return urllib.parse.urlsplit(f"//{self.host}").hostname or self.host

    @property
    def route_url(self) -> str:
        """The URL whose route the node's client decides (a registry's API for an image)."""
        return f"https://{self.host}/v2/" if self.image else self.text

    @property
    def client(self) -> str:
        """Whose NO_PROXY reading decides the route: containerd's (Go) or curl.exe's."""
        return "go" if self.image else "curl"


@dataclass(frozen=True)
class OutageRecord:
    """One reboot (or spell off the network) of a host: when its SSH went down and came back, the
    Node's cordon at each edge as the lab saw it at that instant, and the pods a drain should have
    moved that were still bound to the node as it went down (None: not recorded)."""

    down_at: dt.datetime
    up_at: dt.datetime | None
    at_down: bool | None = None
    at_up: bool | None = None
    pods_at_down: tuple[str, ...] | None = None
    requested_at: dt.datetime | None = None  # when its restart was asked for (None: not a restart)

    @property
    def asked_at(self) -> dt.datetime:
        """When this reboot was committed to: its restart request, else its going down."""
        return self.requested_at or self.down_at


@dataclass(frozen=True)
class HostRecord:
    """What only a simulator shows of one host, for one step."""

    service_environments: dict[str, dict[str, str] | None]  # egress service -> its process environment
    boots: int  # boots since the step began
    outages: tuple[OutageRecord, ...]  # since the step began
    root_removed: frozenset[str]  # thumbprints taken out of its Root store since the step began
    commands: int  # SSH commands run on it so far (a host whose key changed must get none)
    listening: bool  # its SSH answers now
    # Its Node's cordon changes as the store committed them — the outages' clock — oldest first
    # (None: not recorded; the judge's watch of the Nodes is used instead)
    cordon_changes: tuple[tuple[dt.datetime, bool], ...] | None = None
    # Linux: each egress unit's proxy variables from its files alone, as its next boot would start
    # it (None: it would not start); empty on Windows
    boot_environments: dict[str, dict[str, str] | None] = field(default_factory=dict)


@dataclass
class Evidence:
    """What a step left behind beyond the API and the probes, grouped by node address."""

    # Flows since the marks (the pulls and fetches): (the proxy that logged it, the flow). In the lab
    # they only add what a proxy's own log says to a verdict's text.
    pull_flows: dict[str, list[tuple[object, dict[str, Any]]]] = field(default_factory=dict)
    step_flows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # since the step began
    origin_sources: dict[str, dict[str, int]] = field(default_factory=dict)  # host -> source -> requests
    violations: dict[str, list[str]] = field(default_factory=dict)  # source -> origins that refused it
    # The lab's own route evidence: each node's client records since the marks, the sources each
    # probe id reached an origin from, and every refusal since the step began: (origin, source, port)
    egress: dict[str, list[EgressRecord]] = field(default_factory=dict)
    probe_sources: dict[str, list[str]] = field(default_factory=dict)
    refusals: list[tuple[str, str, int]] = field(default_factory=list)
    # Node address -> the kubelet's requests through a proxy since the step began (None: not the
    # run's to see; the run's own proxy's log, where there is one, is read instead)
    kubelet_via_proxy: dict[str, int] | None = None
    # False: no proxy's log is the run's (the traffic checks judge outcomes only, the kubelet's
    # route is not judged)
    routes_observed: bool = True
    # The lab's records of each host (None: a real host shows none of this)
    hosts: dict[str, HostRecord] | None = None
    # Every origin that may refuse a node at the egress firewall: name -> (a URL of it, whose
    # client's NO_PROXY reading routes it); None: the firewall's refusals are not the run's to see
    origin_routes: dict[str, tuple[str, str]] | None = None
    # Node name -> pods deleted against their PodDisruptionBudget since the step began (None: the
    # API server's record of evictions is the lab's)
    budget_bypasses: dict[str, list[str]] | None = None
    budget: int | None = None  # the reconciler's maxUnavailable, where the run knows it


@dataclass
class Step:
    """One administrator action and what the nodes showed after it."""

    name: str
    started: dt.datetime
    members: list[str]  # node addresses judged as configured instances
    deconfigured: list[str]
    before: dict[str, Expected]
    # Where the evidence source's records stood when the step began (``EvidenceSource.positions``)
    positions: dict[str, int] = field(default_factory=dict)
    expected: Expected = UNCONFIGURED
    drifted: set[str] = field(default_factory=set)  # nodes changed out of band in this step
    absent: list[str] = field(default_factory=list)  # instances off the network for the whole step
    rekeyed: list[str] = field(default_factory=list)  # instances whose SSH host key changed: to be refused
    stuck: list[str] = field(default_factory=list)  # instances whose reboot never ends: to be reported
    # (node, revision) claims of "applied" already on the Nodes when the step began
    claims_before: set[tuple[str, str]] = field(default_factory=set)
    converged: dict[str, float] = field(default_factory=dict)  # address -> seconds after the action
    clock: float = field(default_factory=time.monotonic)  # when it began, on the loops' common clock
    # How late each process's event loop was during the step (process -> worst and summed stall, s):
    # the lab's own starvation, which no verdict may blame on a reconciler
    lag: dict[str, dict[str, float]] = field(default_factory=dict)
    note: str = ""  # what the step did beyond the ordinary (a longer deadline, and why)
    deadline: Deadline | None = None  # how long it may take to converge, and why (None: not worked out yet)
    # Seconds the deadline had moved by the lab's own stalls when the step's last node converged
    # (``converging.converge`` moves it so): what the step's headroom is measured against, beside it
    moved: float = 0.0
    results: list[CheckResult] = field(default_factory=list)


class EvidenceSource(Protocol):
    """Where the judge's evidence beyond the API and its probes comes from (see the module's text)."""

    api_hosts: tuple[str, ...]  # where nodes reach the API server (empty: not known)

    def destinations(self) -> list[ProbedDestination]:
        """Where every member sends traffic after each step."""

    def probe_target(self, destination: ProbedDestination) -> tuple[str, str | None]:
        """What one probe pulls or fetches, and the id it carries (None: it carries none)."""

    def positions(self) -> dict[str, int]:
        """Where the records stand now (kept on the step as it begins)."""

    def activity(self, address: str) -> int | None:
        """A count that grows with everything that can change what a probe of the node shows (None:
        not known, so every look is a new one)."""

    def listening(self) -> set[str] | None:
        """The nodes whose SSH answers now (None: not known; an unreachable node says so itself)."""

    def anyone_down(self, excluded: set[str]) -> bool:
        """Whether a node outside ``excluded`` is down now (a real one shows only as unreachable)."""

    def down_note(self, address: str) -> str:
        """What the source knows of why a node does not answer ('' where nothing)."""

    def lab_fault(self, address: str) -> str:
        """How the lab itself failed the node ('' where it did not): its checks then judge the lab,
        not the reconciler."""

    async def settle(self) -> None:
        """Wait until what has happened so far is logged."""

    def marks(self) -> dict[str, int]:
        """Where each log ends now (what comes after belongs to the pulls and fetches that follow)."""

    def read(self, step: Step, marks: dict[str, int]) -> Evidence:
        """Each log and record read once for the step."""

    def traffic(self, address: str, destination: ProbedDestination, route: Route, result: PullResult,
                evidence: Evidence, probe: str | None = None) -> TrafficEvidence | ProbeEvidence:
        """What one pull or fetch (the probe ``probe``) left behind, and how much of its path the
        evidence shows: the lab's own records of it (``ProbeEvidence``), or what a run against a
        cluster can see (``TrafficEvidence``)."""

    def readable_logs(self) -> list[tuple[str, str]]:
        """(where, text) of logs ordinary users read that the run holds (a credential must not be there)."""

    async def lags(self, since: float) -> dict[str, dict[str, float]]:
        """How late the event loops of the run's other processes (its proxies) have been since
        ``since`` (``time.monotonic()``): process -> {"worst_s", "stalled_s"}."""
