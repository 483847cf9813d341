"""PodDisruptionBudget arithmetic and eviction decisions (pure), as the disruption controller and
the eviction subresource decide them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxyfleet.simulators.controlplane.disruption import (
    EVICTION_REFUSED,
    MANY_BUDGETS,
    DisruptionLedger,
    budgets_for,
    check_eviction_body,
    compute_budget,
    compute_budget_of,
    compute_budgets,
    eviction_decision,
    replica_scales,
    selector_matches,
)
from proxyfleet.simulators.controlplane.errors import APIError

RS_UID = "rs-1"


def pod(name: str, ready: bool = True, phase: str = "Running", labels: dict[str, str] | None = None,
        deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {"app": "web"},
                                "ownerReferences": [{"kind": "ReplicaSet", "uid": RS_UID, "controller": True}]}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def test_max_unavailable_counts_from_the_controllers_scale() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    budget = compute_budget(pdb(maxUnavailable=1), pods, {RS_UID: 3})
    assert (budget.expected_pods, budget.desired_healthy, budget.current_healthy) == (3, 2, 3)
    assert budget.disruptions_allowed == 1
    # one pod already not ready: no further disruption allowed
    assert compute_budget(pdb(maxUnavailable=1), [pod("a"), pod("b"), pod("c", ready=False)],
                          {RS_UID: 3}).disruptions_allowed == 0
    # a missing replica (evicted, replacement not yet running) counts against the budget too
    assert compute_budget(pdb(maxUnavailable=1), [pod("a"), pod("b")], {RS_UID: 3}).disruptions_allowed == 0


def test_percentages_round_up_and_min_available_integers_count_the_pods() -> None:
    pods = [pod(str(i)) for i in range(10)]
    assert compute_budget(pdb(maxUnavailable="25%"), pods, {RS_UID: 10}).desired_healthy == 7  # ceil(2.5) = 3 down
    assert compute_budget(pdb(minAvailable="25%"), pods, {RS_UID: 10}).desired_healthy == 3  # ceil(2.5)
    budget = compute_budget(pdb(minAvailable=8), pods, {})
    assert (budget.expected_pods, budget.disruptions_allowed) == (10, 2)
    assert compute_budget(pdb(minAvailable=8), [], {}).disruptions_allowed == 0  # nothing expected


def test_being_deleted_is_not_healthy() -> None:
    budget = compute_budget(pdb(maxUnavailable=1), [pod("a"), pod("b", deleting=True)], {RS_UID: 2})
    assert budget.current_healthy == 1 and budget.disruptions_allowed == 0


def test_eviction_decisions_in_the_servers_words() -> None:
    full = compute_budget(pdb(maxUnavailable=1), [pod("a"), pod("b")], {RS_UID: 2})
    short = compute_budget(pdb(maxUnavailable=1), [pod("a")], {RS_UID: 2})
    assert eviction_decision(pod("a"), [full]) is None
    refusal = eviction_decision(pod("a"), [short])
    assert refusal is not None and refusal.code == 429 and refusal.reason == "TooManyRequests"
    assert refusal.message == EVICTION_REFUSED
    assert refusal.details == {"causes": [{"reason": "DisruptionBudget", "message":
                                           "The disruption budget web needs 1 healthy pods and has 1 currently"}]}
    many = eviction_decision(pod("a"), [full, full])
    assert many is not None and (many.code, many.message) == (500, MANY_BUDGETS)
    assert eviction_decision(pod("a"), []) is None  # no budget, no limit
    for free in (pod("p", phase="Pending"), pod("s", phase="Succeeded"), pod("d", deleting=True)):
        assert eviction_decision(free, [short]) is None  # nothing running to protect


def test_an_unhealthy_pod_may_go_while_the_budget_is_met() -> None:
    """unhealthyPodEvictionPolicy IfHealthyBudget (the default)."""
    met = compute_budget(pdb(minAvailable=1), [pod("a"), pod("b", ready=False)], {})
    assert met.disruptions_allowed == 0
    assert eviction_decision(pod("b", ready=False), [met]) is None
    assert eviction_decision(pod("a"), [met]) is not None


def test_label_selectors() -> None:
    labels = {"app": "web", "tier": "front"}
    assert selector_matches(None, labels)  # policy/v1: an empty selector selects everything
    assert selector_matches({"matchLabels": {"app": "web"}}, labels)
    assert not selector_matches({"matchLabels": {"app": "db"}}, labels)
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]},
                                labels)
    assert selector_matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, labels)


def test_a_budget_covers_only_pods_of_its_own_namespace() -> None:
    elsewhere = {**pdb(maxUnavailable=1), "metadata": {"name": "web", "namespace": "other"}}
    pods = [pod("a"), pod("b")]  # namespace "ns", labels the budget's selector matches
    assert budgets_for(pods[0], [pdb(maxUnavailable=1), elsewhere]) == [pdb(maxUnavailable=1)]
    assert compute_budget_of(elsewhere, pods, {RS_UID: 2}).current_healthy == 0
    assert compute_budget_of(pdb(maxUnavailable=1), pods, {RS_UID: 2}).current_healthy == 2


def test_eviction_bodies() -> None:
    check_eviction_body({"metadata": {"name": "a"}}, "a", "ns")  # kind and apiVersion default
    check_eviction_body({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a", "namespace": "ns"}},
                        "a", "ns")
    with pytest.raises(APIError, match="name in URL does not match"):
        check_eviction_body({"metadata": {"name": "b"}}, "a", "ns")
    with pytest.raises(APIError, match="policy/v1 Eviction"):
        check_eviction_body({"kind": "Pod", "metadata": {"name": "a"}}, "a", "ns")
    with pytest.raises(APIError):
        check_eviction_body([], "a", "ns")


def test_the_ledger_is_bounded_and_filters_by_time() -> None:
    ledger = DisruptionLedger()
    ledger.record(pod("a"), "n1", "evicted", "")
    first = ledger.entries[0].at
    ledger.record(pod("b"), "n1", "bypassed", "why")
    assert [e.pod for e in ledger.since(first)] == ["ns/a", "ns/b"]
    assert ledger.entries[1].outcome == "bypassed" and ledger.entries[1].node == "n1"
    for _ in range(10_005):
        ledger.record(pod("c"), "n2", "evicted", "")
    assert len(ledger.entries) == 10_000


def test_a_budget_condition_carries_its_transition_time_as_kubernetes_conditions_do() -> None:
    """The official client refuses a condition without lastTransitionTime (a V1Condition needs it)."""
    from proxyfleet.simulators.controlplane.disruption import Budget

    allowing = Budget("web", expected_pods=3, desired_healthy=2, current_healthy=3)
    first = allowing.status(1, None, "2026-01-01T00:00:00Z")
    assert first["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    same = allowing.status(1, first, "2026-01-01T00:05:00Z")  # unchanged: the time it changed is kept
    assert same["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    refusing = Budget("web", expected_pods=3, desired_healthy=3, current_healthy=3).status(1, same, "2026-01-01T00:09:00Z")
    assert refusing["conditions"][0] == {**refusing["conditions"][0], "status": "False",
                                         "lastTransitionTime": "2026-01-01T00:09:00Z"}


_LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db", "a"]), max_size=2)
_SELECTORS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"matchLabels": _LABELS}),
    st.fixed_dictionaries({"matchExpressions": st.lists(st.fixed_dictionaries({
        "key": st.sampled_from(["app", "tier"]), "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
        "values": st.lists(st.sampled_from(["web", "db", "a"]), max_size=2)}), max_size=2)}))
_SPECS = st.one_of(st.fixed_dictionaries({"maxUnavailable": st.sampled_from([0, 1, 2, "25%", "50%"])}),
                   st.fixed_dictionaries({"minAvailable": st.sampled_from([0, 1, 3, "50%"])}))


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    owners = ["rs-1", "rs-2", "rs-3"]
    replica_sets = [{"metadata": {"uid": uid}, "spec": {"replicas": draw(st.integers(0, 4))}} for uid in owners]
    pods = []
    for i in range(draw(st.integers(0, 12))):
        made = pod(f"p{i}", ready=draw(st.booleans()), phase=draw(st.sampled_from(["Running", "Pending", "Succeeded"])),
                   deleting=draw(st.booleans()))
        made["metadata"].update(labels=draw(_LABELS), namespace=draw(st.sampled_from(["ns", "other"])))
        made["metadata"]["ownerReferences"][0]["uid"] = draw(st.sampled_from(owners))
        pods.append(made)
    budgets = [{"metadata": {"name": f"b{i}", "namespace": draw(st.sampled_from(["ns", "other"]))},
                "spec": {**({"selector": selector} if (selector := draw(_SELECTORS)) is not None else {}),
                         **draw(_SPECS)}}
               for i in range(draw(st.integers(1, 4)))]
    return budgets, pods, replica_sets


@settings(max_examples=300, deadline=None)
@given(_cluster())
def test_one_budget_computed_for_an_eviction_is_the_controllers_budget(
        cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    # an eviction computes only the budgets selecting its pod (compute_budget_of, no grouping); the
    # disruption controller all of them at once (compute_budgets): the same arithmetic either way
    budgets, pods, replica_sets = cluster
    scales = replica_scales(replica_sets)
    for budget, status in compute_budgets(budgets, pods, replica_sets):
        assert compute_budget_of(budget, pods, scales) == status
