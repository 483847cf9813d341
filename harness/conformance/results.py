"""What a conformance run found: one ``CheckResult`` per node, step and check.

In memory a scenario holds one ``CheckResult`` per node; in JSON (``ScenarioResult.to_json``,
what the reports and the pytest plugin write) identical results are one record with the list of
their nodes (``group_checks``): a 1,000-node fleet that passed writes each outcome once, not a
thousand times. ``expand_checks`` reads both that and the older one-record-per-node form back.
"""

from __future__ import annotations

import functools
import heapq
import importlib.metadata
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

# inconclusive: the evidence could be the lab's own starvation (checks.Verdict.inconclusive)
Status = Literal["passed", "failed", "skipped", "inconclusive"]

INTERRUPTED_EXIT = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
# A run's verdict by its exit code (any other code: FAILED): what every report and the command say.
VERDICTS = {0: "PASSED", 4: "INCONCLUSIVE", INTERRUPTED_EXIT: "INTERRUPTED"}


def verdict_of(exit_code: int) -> str:
    """PASSED, INCONCLUSIVE, INTERRUPTED or FAILED."""
    return VERDICTS.get(exit_code, "FAILED")

# Every check a scenario step can run, in report order, with what it proves.
CHECK_FAMILIES: dict[str, str] = {
    "converged": "the node reached the cluster's settings before the deadline",
    "registry-env": "Windows: machine HTTP_PROXY/HTTPS_PROXY/NO_PROXY equal Proxy status, byte for byte",
    "units-loaded": "Linux: no egress unit's files changed since systemd loaded them (no daemon-reload owed)",
    "unit-environment": "Linux: each egress unit's own files (Environment=, EnvironmentFile=) give it Proxy status "
                        "in both spellings at its next boot, not only the running process (set-environment)",
    "certificates": "the Root store (Windows) or the extracted bundle every TLS client reads (Linux) holds "
                    "exactly the baseline plus the trusted bundle's certificates",
    "services-restarted": "every egress service started after the change",
    "service-environment": "every egress service runs with the proxy variables of Proxy status (on Linux in both "
                           "spellings, read from /proc/PID/environ)",
    "pull-internet": "an image pull from the internet registry takes the route NO_PROXY decides",
    "pull-intranet": "an image pull from the intranet (NO_PROXY) registry takes the route NO_PROXY decides",
    "fetch-http": "a plain-HTTP request to an internet site (curl.exe, new session) takes HTTP_PROXY, not "
                  "HTTPS_PROXY, or goes direct as NO_PROXY decides",
    "destinations": "each of a customer's own destinations (repro --destination) takes the route NO_PROXY decides "
                    "for its client: containerd for an image, curl.exe for a URL",
    "node-ready": "the Node is Ready and schedulable, and kubelet API traffic bypassed the proxy",
    "firewall": "the node made no direct connection the egress firewall refused",
    "reboots": "at most one reboot per change, none without one",
    "drained-while-down": "the node was cordoned for the whole of every reboot",
    "drained": "before every reboot the node's pods (not DaemonSet pods) were evicted, and no pod was "
               "deleted against its PodDisruptionBudget",
    "disruption-budget": "never more instances down or cordoned by the reconciler than maxUnavailable; "
                         "an administrator's cordon kept",
    "files": "without a proxy the node holds none of a reconciler's files (bundle, certificates, records)",
    "trusted-ca": "while a proxy is set, the operator's trusted-ca ConfigMap exists, labelled for injection, "
                  "holding the merged bundle",
    "host-key": "a node whose SSH host key changed is refused (no command) and the refusal is reported",
    "reported": "a node that never came back from its reboot is reported by a Warning Event about it",
    "credentials": "no proxy credential, in any encoding, in anything the reconciler writes or users can read",
}


class ChecksFailed(AssertionError):
    """A scenario failed on its checks (``Conformance.assert_passed``), as opposed to breaking."""


def _status(value: Any) -> Status:
    if value not in ("passed", "failed", "skipped", "inconclusive"):
        raise ValueError(f"unknown status {value!r}")
    return cast(Status, value)


@functools.cache
def installed_version() -> str:
    """proxyfleet's version as installed (what a report records: shards of different versions are
    not one run)."""
    try:
        return importlib.metadata.version("proxyfleet")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class CheckResult:
    """One check on one node after one step. ``expected``/``observed`` are short, redacted text."""

    node: str
    check: str
    status: Status
    expected: str
    observed: str
    step: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(node=str(data["node"]), check=str(data["check"]), status=_status(data["status"]),
                   expected=str(data["expected"]), observed=str(data["observed"]), step=str(data.get("step", "")))

    def describe(self) -> str:
        where = f" after {self.step!r}" if self.step else ""
        return f"{self.node}: {self.check}{where}: expected {self.expected}, observed {self.observed}"


# The fields one grouped record shares among its nodes, in the order the JSON writes them.
_SHARED = ("check", "status", "expected", "observed", "step")


def group_checks(checks: Sequence[CheckResult]) -> list[dict[str, Any]]:
    """``checks`` as JSON records, one per distinct ``(check, status, expected, observed, step)``
    with its ``nodes`` in the order they came (a node twice if it was judged twice alike), the
    records in the order of their first result: what ``expand_checks`` turns back into the same
    list."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for result in checks:
        key = (result.check, result.status, result.expected, result.observed, result.step)
        record = groups.get(key)
        if record is None:
            record = groups[key] = {**dict(zip(_SHARED, key, strict=True)), "nodes": []}
        record["nodes"].append(result.node)
    return list(groups.values())


def expand_checks(records: Sequence[Mapping[str, Any]]) -> list[CheckResult]:
    """One ``CheckResult`` per node from JSON records, grouped (``nodes``: a list) or one per node
    as reports before the grouping wrote them (``node``), in the order the results were judged:
    step by step, node by node, check by check, each in the order it first appears (the order a
    scenario records them, so a grouped list comes back exactly as it was)."""
    results: list[CheckResult] = []
    node_chains: list[list[str]] = []
    check_chains: dict[str, list[str]] = {}
    for record in records:
        nodes = record["nodes"] if "nodes" in record else [record["node"]]
        if isinstance(nodes, (str, bytes)) or not isinstance(nodes, list):
            raise TypeError("a check record's nodes are not a list")
        grouped = [CheckResult.from_json({**record, "node": node}) for node in nodes]
        results.extend(grouped)
        node_chains.append([r.node for r in grouped])  # each record lists its nodes in the order judged
        for result in grouped[:1]:  # records come in the order of their first result: checks in order per step
            check_chains.setdefault(result.step, []).append(result.check)
    steps = {step: index for index, step in enumerate(dict.fromkeys(r.step for r in results))}
    nodes_rank, checks_rank = _merged_order(node_chains), _merged_order(check_chains.values())
    return sorted(results, key=lambda r: (steps[r.step], nodes_rank[r.node], checks_rank[r.check]))


def _merged_order(chains: Iterable[Sequence[str]]) -> dict[str, int]:
    """One order of every name in ``chains`` that keeps the order of each chain (a topological
    sort; what no chain orders, or chains that contradict each other, by first appearance)."""
    first: dict[str, int] = {}
    after: dict[str, set[str]] = {}
    before_count: dict[str, int] = {}
    for chain in chains:
        for name in chain:
            first.setdefault(name, len(first))
            before_count.setdefault(name, 0)
        for earlier, later in itertools.pairwise(dict.fromkeys(chain)):
            if later not in after.setdefault(earlier, set()):
                after[earlier].add(later)
                before_count[later] += 1
    ready = [(index, name) for name, index in first.items() if not before_count[name]]
    heapq.heapify(ready)
    order: dict[str, int] = {}
    while len(order) < len(first):
        if not ready:  # contradicting chains: the earliest left goes next
            name = min((n for n in first if n not in order), key=first.__getitem__)
            heapq.heappush(ready, (first[name], name))
        _, name = heapq.heappop(ready)
        if name in order:
            continue
        order[name] = len(order)
        for later in after.get(name, ()):
            before_count[later] -= 1
            if not before_count[later] and later not in order:
                heapq.heappush(ready, (first[later], later))
    return order


# How a scenario ended: its checks passed, its checks failed (ChecksFailed), or it broke (any other
# exception: the lab did not start, a step raised). Decided from the exception type, never its text.
Ending = Literal["passed", "checks-failed", "error", "skipped"]


@dataclass
class ScenarioResult:
    """One scenario (a pytest test) and every check it ran. The one schema for a scenario: the
    pytest plugin writes it into the test report, ``proxyfleet conformance`` reads it back, and
    ``--json`` reports carry it."""

    name: str
    workflow: str
    status: Status
    checks: list[CheckResult] = field(default_factory=list)
    duration_s: float = 0.0
    error: str = ""  # a failure outside the checks (the lab did not start, a step raised)
    ending: Ending = "passed"
    nodes: int = 0
    timeline: list[dict[str, Any]] = field(default_factory=list)  # per step: node -> seconds to converge
    flows: dict[str, dict[str, int]] = field(default_factory=dict)  # "proxy kind host status" -> count
    violations: list[dict[str, Any]] = field(default_factory=list)  # firewall refusals
    api_internal_host: str = ""  # the lab cluster's internal API name (it follows the install-config)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "workflow": self.workflow, "status": self.status,
                                "ending": self.ending, "nodes": self.nodes,
                                "checks": group_checks(self.checks),
                                "duration_s": round(self.duration_s, 3), "timeline": self.timeline,
                                "flows": self.flows, "violations": self.violations,
                                "api_internal_host": self.api_internal_host}
        if self.error:
            data["error"] = self.error
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScenarioResult:
        ending = data.get("ending", "passed")
        if ending not in ("passed", "checks-failed", "error", "skipped"):
            raise ValueError(f"unknown scenario ending {ending!r}")
        return cls(name=str(data["name"]), workflow=str(data.get("workflow", "?")), status=_status(data["status"]),
                   checks=expand_checks(data.get("checks") or []),
                   duration_s=float(data.get("duration_s", 0.0)), error=str(data.get("error", "")),
                   ending=cast(Ending, ending), nodes=int(data.get("nodes", 0)),
                   timeline=list(data.get("timeline") or []), flows=dict(data.get("flows") or {}),
                   violations=list(data.get("violations") or []),
                   api_internal_host=str(data.get("api_internal_host", "")))

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "failed"]

    def inconclusive(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "inconclusive"]


@dataclass
class ConformanceRun:
    """A whole ``proxyfleet conformance`` run."""

    nodes: int  # per lab, every kind
    variant: str
    scenarios: list[ScenarioResult] = field(default_factory=list)
    linux_nodes: int = 0  # of them Linux (``--linux-nodes``)
    linux_flavour: str = ""  # theirs (``--linux-flavour``; empty: no Linux nodes)
    duration_s: float = 0.0
    # the options it ran with, as a run file holds them (group -> key -> value; credentials
    # redacted): what `proxyfleet conformance --config-from` reads back
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the command's exit status where it was more than the checks say (a run stopped before every
    # scenario ran): what `proxyfleet report show` exits with
    command_exit: int | None = None
    # a cluster run's put-back, once done: how long it waited for the nodes (--wait-restored; 0:
    # it did not) and what was still rolling when it stopped waiting (exit code 3)
    put_back: dict[str, Any] | None = None
    # the part(s) of a sharded run this is: [{"index": K, "total": N}] for `--shard K/N`; a merged
    # report lists every shard with its scenarios and wall time (empty: not sharded)
    shards: list[dict[str, Any]] = field(default_factory=list)
    version: str = field(default_factory=installed_version)

    @property
    def fleet(self) -> str:
        """The labs' fleet in words: "10 node(s)", or "10 node(s) (5 Linux)" for a mixed one (its
        distribution named if not RHCOS, the default: "(5 Linux, debian)")."""
        flavour = f", {self.linux_flavour}" if self.linux_flavour not in ("", "rhcos") else ""
        return f"{self.nodes} node(s)" + (f" ({self.linux_nodes} Linux{flavour})" if self.linux_nodes else "")

    def summary(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "skipped": 0, "inconclusive": 0}
        for scenario in self.scenarios:
            counts[scenario.status] += 1
        return counts

    @property
    def passed(self) -> bool:
        """Every scenario passed (or was skipped): no failed check, and none left inconclusive."""
        return bool(self.scenarios) and all(s.status in ("passed", "skipped") and not s.failures()
                                            and not s.inconclusive() for s in self.scenarios)

    @property
    def exit_code(self) -> int:
        """0: passed; 1: something failed; 4: nothing failed, but the lab's own starvation left
        something unjudged (neither a pass nor a failure: run again on a machine less busy)."""
        if self.passed:
            return 0
        if any(s.status == "failed" or s.failures() for s in self.scenarios) or not self.scenarios:
            return 1
        return 4

    @property
    def reported_exit(self) -> int:
        """The exit code a report shows: the command's where it recorded one, else the checks'."""
        return self.exit_code if self.command_exit is None else self.command_exit

    def put_back_lines(self) -> tuple[bool, list[str]]:
        """What a cluster run's put-back found (``put_back_lines``; a lab run: nothing to say)."""
        return put_back_lines(self.put_back)

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary(), "version": self.version, "duration_s": round(self.duration_s, 3),
                "nodes": self.nodes, **({"linux_nodes": self.linux_nodes} if self.linux_nodes else {}),
                **({"linux_flavour": self.linux_flavour} if self.linux_flavour else {}),
                "variant": self.variant, "config": self.config,
                "exit_code": self.reported_exit,
                **({"put_back": self.put_back} if self.put_back is not None else {}),
                **({"shards": self.shards} if self.shards else {}),
                "scenarios": [s.to_json() for s in self.scenarios]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConformanceRun:
        run = cls(nodes=int(data["nodes"]), variant=str(data["variant"]), linux_nodes=int(data.get("linux_nodes", 0)),
                  linux_flavour=str(data.get("linux_flavour", "")),
                  scenarios=[ScenarioResult.from_json(s) for s in data.get("scenarios") or []],
                  duration_s=float(data.get("duration_s", 0.0)), config=dict(data.get("config") or {}),
                  put_back=dict(data["put_back"]) if data.get("put_back") is not None else None,
                  shards=[dict(shard) for shard in data.get("shards") or []],
                  version=str(data.get("version") or "unknown"))
        recorded = data.get("exit_code")
        if recorded is not None and int(recorded) != run.exit_code:  # the command knew more than its checks
            run.command_exit = int(recorded)
        return run


def put_back_lines(found: Mapping[str, Any] | None) -> tuple[bool, list[str]]:
    """What a cluster's put-back found (``ConformanceRun.put_back``, also what ``proxyfleet
    restore --wait-restored`` waits for), one line each, and whether it is all well."""
    if found is None:
        return True, []
    if found.get("failed"):
        return False, [f"the cluster could not be put back: {found['failed']}"]
    waited = float(found.get("waited_s") or 0)
    if found.get("error"):
        return False, [f"the cluster was put back, but its nodes could not be waited for: {found['error']}"]
    still = [str(line) for line in found.get("still_rolling") or []]
    if still:
        return False, [f"the cluster was still rolling {waited:.0f} s after its put-back:",
                       *[f"  {line}" for line in still]]
    return True, ["the cluster was put back" + (f" and its nodes were back within {waited:.0f} s" if waited
                                                else " (its nodes were not waited for: --wait-restored)")]
