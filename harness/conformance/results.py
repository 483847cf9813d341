"""What a conformance run found: one ``CheckResult`` per node, step and check."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["passed", "failed", "skipped"]

# Every check a scenario step can run, in report order, with what it proves.
CHECK_FAMILIES: dict[str, str] = {
    "converged": "the node reached the cluster's settings before the deadline",
    "registry-env": "machine HTTP_PROXY/HTTPS_PROXY/NO_PROXY equal Proxy status, byte for byte",
    "certificates": "the Root store holds exactly the baseline plus the trusted bundle's certificates",
    "services-restarted": "every egress service started after the change",
    "service-environment": "every egress service runs with the proxy variables of Proxy status",
    "pull-internet": "an image pull from the internet registry takes the route NO_PROXY decides",
    "pull-intranet": "an image pull from the intranet (NO_PROXY) registry takes the route NO_PROXY decides",
    "node-ready": "the Node is Ready and schedulable, and kubelet API traffic bypassed the proxy",
    "firewall": "the node made no direct connection the egress firewall refused",
    "reboots": "at most one reboot per change, none without one",
    "drained-while-down": "the node was cordoned for the whole of every reboot",
}


@dataclass
class CheckResult:
    """One check on one node after one step. ``expected``/``observed`` are short, redacted text."""

    node: str
    check: str
    status: Status
    expected: str
    observed: str
    step: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(**{k: data[k] for k in ("node", "check", "status", "expected", "observed")},
                   step=data.get("step", ""))

    def describe(self) -> str:
        where = f" after {self.step!r}" if self.step else ""
        return f"{self.node}: {self.check}{where}: expected {self.expected}, observed {self.observed}"


@dataclass
class ScenarioResult:
    """One scenario (a pytest test) and every check it ran."""

    name: str
    workflow: str
    status: Status
    checks: list[CheckResult] = field(default_factory=list)
    duration_s: float = 0.0
    error: str = ""  # a failure outside the checks (the lab did not start, a step raised)
    timeline: list[dict[str, Any]] = field(default_factory=list)  # per step: node -> seconds to converge
    flows: dict[str, dict[str, int]] = field(default_factory=dict)  # "proxy kind host status" -> count
    violations: list[dict[str, Any]] = field(default_factory=list)  # firewall refusals
    api_internal_host: str = ""  # the lab cluster's internal API name (it follows the install-config)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "workflow": self.workflow, "status": self.status,
                                "checks": [c.as_json() for c in self.checks],
                                "duration_s": round(self.duration_s, 3), "timeline": self.timeline,
                                "flows": self.flows, "violations": self.violations}
        if self.error:
            data["error"] = self.error
        return data

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "failed"]


@dataclass
class ConformanceRun:
    """A whole ``proxyfleet conformance`` run."""

    nodes: int
    variant: str
    scenarios: list[ScenarioResult] = field(default_factory=list)
    duration_s: float = 0.0

    def summary(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for scenario in self.scenarios:
            counts[scenario.status] += 1
        return counts

    @property
    def passed(self) -> bool:
        return bool(self.scenarios) and all(s.status != "failed" and not s.failures() for s in self.scenarios)

    def as_json(self) -> dict[str, Any]:
        return {"summary": self.summary(), "duration_s": round(self.duration_s, 3), "nodes": self.nodes,
                "variant": self.variant, "scenarios": [s.as_json() for s in self.scenarios]}
