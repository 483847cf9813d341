"""PodDisruptionBudgets and the Eviction API, as kube-apiserver and the disruption controller
decide them (pure functions over plain objects; the server and the workload controllers call
them).

What is modelled: ``minAvailable``/``maxUnavailable`` as integers or percentages, the expected
count from the owning controller's scale (``maxUnavailable`` and percentages) or from the
matching pods (integer ``minAvailable``), healthy = Ready and not being deleted, the default
``unhealthyPodEvictionPolicy: IfHealthyBudget``, pods that need no budget (Pending, Succeeded,
Failed, already deleting), and the 429/500 answers with the server's wording. Not modelled:
``status.disruptedPods`` bookkeeping (the budget is computed from live pods at the moment of the
eviction, which is what that bookkeeping approximates) and graceful termination (an evicted pod is
removed at once).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.simulators.controlplane.errors import APIError


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


EVICTION_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
MANY_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def controller_of(obj: dict[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any: the object's own (read it, do not
    change it; every workload pass asks it of every pod)."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return reference  # type: ignore[no-any-return]
    return None


def deleting(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or deleting(pod):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A ``metav1.LabelSelector``; an empty one selects everything, as for PDBs in policy/v1."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def covers(budget: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """Whether a PodDisruptionBudget covers a pod: the same namespace, and its selector matches
    (the budget read once, for the pass over many pods an eviction makes)."""
    namespace = (budget.get("metadata") or {}).get("namespace")
    selector = (budget.get("spec") or {}).get("selector")

    def covered(pod: dict[str, Any]) -> bool:
        metadata = pod.get("metadata") or {}
        return metadata.get("namespace") == namespace and selector_matches(selector, metadata.get("labels") or {})

    return covered


def budgets_for(pod: dict[str, Any], budgets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The PodDisruptionBudgets that cover the pod."""
    return [budget for budget in budgets if covers(budget)(pod)]


def _resolve(value: Any, total: int, round_up: bool) -> int:
    """An IntOrString against ``total`` (percentages as intstr.GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        fraction = int(value[:-1]) * total / 100
        return math.ceil(fraction) if round_up else math.floor(fraction)
    return int(value)


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget's status, computed as the disruption controller does."""

    name: str
    expected_pods: int
    desired_healthy: int
    current_healthy: int

    @property
    def disruptions_allowed(self) -> int:
        if self.expected_pods <= 0:
            return 0
        return max(0, self.current_healthy - self.desired_healthy)

    def status(self, generation: int, previous: dict[str, Any] | None = None, now: str = "") -> dict[str, Any]:
        """The budget's status; its condition keeps ``previous``'s lastTransitionTime while its
        status is unchanged (``now`` when it changes), as every Kubernetes condition does."""
        allowed = self.disruptions_allowed
        value = "True" if allowed else "False"
        before: dict[str, Any] = next((c for c in (previous or {}).get("conditions") or []
                                       if c.get("type") == "DisruptionAllowed"), {})
        since = before.get("lastTransitionTime") if before.get("status") == value else None
        return {"observedGeneration": generation, "disruptionsAllowed": allowed,
                "currentHealthy": self.current_healthy, "desiredHealthy": self.desired_healthy,
                "expectedPods": self.expected_pods,
                "conditions": [{"type": "DisruptionAllowed", "status": value,
                                "reason": "SufficientPods" if allowed else "InsufficientPods",
                                "message": "", "observedGeneration": generation,
                                "lastTransitionTime": since or now or _now()}]}


def compute_budget(pdb: dict[str, Any], pods: list[dict[str, Any]], scales: dict[str, int]) -> Budget:
    """``pods``: the pods the budget selects; ``scales``: each controller's desired replicas by uid."""
    spec = pdb.get("spec") or {}
    current = sum(1 for pod in pods if pod_ready(pod))
    owners = {ref["uid"] for pod in pods if (ref := controller_of(pod)) is not None and ref.get("uid")}
    scale = sum(scales.get(uid, 0) for uid in owners)
    if "maxUnavailable" in spec:
        expected = scale
        desired = max(0, expected - _resolve(spec["maxUnavailable"], expected, round_up=True))
    elif isinstance(spec.get("minAvailable"), str):
        expected = scale
        desired = _resolve(spec["minAvailable"], expected, round_up=True)
    else:
        expected = len(pods)
        desired = int(spec.get("minAvailable", 0))
    return Budget(pdb["metadata"]["name"], expected, desired, current)


def replica_scales(replica_sets: list[dict[str, Any]]) -> dict[str, int]:
    """Each ReplicaSet's desired replicas, by uid (what a budget's expected pods come from)."""
    return {rs["metadata"]["uid"]: int((rs.get("spec") or {}).get("replicas", 1)) for rs in replica_sets}


def compute_budget_of(pdb: dict[str, Any], pods: list[dict[str, Any]], scales: dict[str, int]) -> Budget:
    """One PodDisruptionBudget's status from ``pods`` (any, of any namespace: the ones it selects
    are picked here). What an eviction asks: one budget, so one look at each pod and no grouping
    — at 1,000 nodes (2,000 pods) 0.44 ms, against 0.66 ms for ``compute_budgets`` of that one budget."""
    return compute_budget(pdb, list(filter(covers(pdb), pods)), scales)


def compute_budgets(pdbs: list[dict[str, Any]], pods: list[dict[str, Any]],
                    replica_sets: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Budget]]:
    """Each PodDisruptionBudget with its status, from the pods and ReplicaSets as they are now
    (what the disruption controller publishes)."""
    scales = replica_scales(replica_sets)
    # Pods grouped by namespace and labels, so each selector is matched once per distinct set of
    # labels (a few per service), not once per pod: a 1,000-node lab has ~40 budgets and ~2,000 pods.
    groups: dict[tuple[Any, tuple[tuple[str, str], ...]], list[dict[str, Any]]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        groups.setdefault((metadata.get("namespace"), tuple(sorted((metadata.get("labels") or {}).items()))),
                          []).append(pod)
    selected: dict[int, list[dict[str, Any]]] = {id(pdb): [] for pdb in pdbs}
    for members in groups.values():
        for pdb in budgets_for(members[0], pdbs):  # the first stands for its group: same namespace, labels
            selected[id(pdb)].extend(members)
    return [(pdb, compute_budget(pdb, selected[id(pdb)], scales)) for pdb in pdbs]


def eviction_decision(pod: dict[str, Any], budgets: list[Budget]) -> APIError | None:
    """None when the eviction may delete the pod now; otherwise the server's answer."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed", "Pending") or deleting(pod):
        return None  # no budget protects a pod that is not running
    if not budgets:
        return None
    if len(budgets) > 1:
        return APIError(500, "InternalError", MANY_BUDGETS)
    budget = budgets[0]
    if not pod_ready(pod) and budget.current_healthy >= budget.desired_healthy:
        return None  # IfHealthyBudget: an unhealthy pod may go while the budget is met
    if budget.disruptions_allowed > 0:
        return None
    cause = {"reason": "DisruptionBudget",
             "message": f"The disruption budget {budget.name} needs {budget.desired_healthy} healthy pods "
                        f"and has {budget.current_healthy} currently"}
    return APIError(429, "TooManyRequests", EVICTION_REFUSED, {"causes": [cause]})


def check_eviction_body(body: Any, name: str, namespace: str) -> None:
    """The request body must be an Eviction naming the pod of the URL."""
    # Like any create body, kind and apiVersion default from the endpoint when absent.
    if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction") or \
            body.get("apiVersion") not in (None, "policy/v1", "policy/v1beta1"):
        raise APIError(400, "BadRequest", "the body of an eviction must be a policy/v1 Eviction")
    metadata = body.get("metadata") or {}
    if metadata.get("name") != name:
        raise APIError(400, "BadRequest", "name in URL does not match name in Eviction object")
    if metadata.get("namespace") not in (None, "", namespace):
        raise APIError(400, "BadRequest", "namespace in URL does not match namespace in Eviction object")


@dataclass(frozen=True)
class Disruption:
    """One eviction asked for, or one pod deleted directly while its budget allowed none."""

    at: dt.datetime
    pod: str  # namespace/name
    node: str
    outcome: str  # "evicted", "refused" (429/500) or "bypassed" (deleted directly against its budget)
    detail: str


@dataclass
class DisruptionLedger:
    """Lab evidence the API server keeps: every eviction and every budget bypassed."""

    entries: list[Disruption] = field(default_factory=list)

    def record(self, pod: dict[str, Any], node: str, outcome: str, detail: str) -> None:
        metadata = pod.get("metadata") or {}
        self.entries.append(Disruption(dt.datetime.now(dt.UTC), f"{metadata.get('namespace')}/{metadata.get('name')}",
                                       node, outcome, detail))
        del self.entries[:-10_000]  # bounded: a long-running lab keeps the latest

    def since(self, moment: dt.datetime) -> list[Disruption]:
        return [entry for entry in self.entries if entry.at >= moment]
