"""A scenario on many nodes summarised: counts per check and step, what did not pass grouped where
identical, passes grouped by observation with the rest counted, a convergence curve one corner
per pixel column."""

from __future__ import annotations

from proxyfleet.harness.conformance.fleetsummary import (
    LARGE_FLEET,
    is_large,
    merged_steps,
    outcomes,
    pass_summaries,
    step_counts,
)
from proxyfleet.harness.conformance.results import CheckResult, ScenarioResult, Status


def _result(node: int, check: str, status: Status = "passed", observed: str = "ok", step: str = "proxy added",
            expected: str = "ok") -> CheckResult:
    return CheckResult(f"127.10.0.{node}", check, status, expected, observed, step)


def _fleet() -> list[CheckResult]:
    """Ten nodes, two steps; node 3 fails registry-env, nodes 4 and 5 alike, node 6 is inconclusive."""
    results = []
    for step in ("instances join", "proxy added"):
        for node in range(1, 11):
            results.append(_result(node, "registry-env", step=step,
                                   **({"status": "failed", "observed": "NO_PROXY=unset"}
                                      if step == "proxy added" and node in (3, 4, 5) else {})))
            results.append(_result(node, "converged", observed=f"settled after {node % 4}.00s", step=step))
            results.append(_result(node, "node-ready", step=step,
                                   **({"status": "inconclusive", "observed": "lab stalled"} if node == 6 else {})))
            results.append(_result(node, "files", "skipped", "needs lab evidence", step))
    return results


def test_counts_per_check_and_step_in_report_order() -> None:
    counted = step_counts(_fleet())
    assert [(c.check, c.step) for c in counted] == [
        ("converged", "instances join"), ("converged", "proxy added"), ("registry-env", "instances join"),
        ("registry-env", "proxy added"), ("node-ready", "instances join"), ("node-ready", "proxy added"),
        ("files", "instances join"), ("files", "proxy added")]  # CHECK_FAMILIES' order, steps as run
    by_key = {(c.check, c.step): c for c in counted}
    assert by_key["registry-env", "proxy added"].counts == {"passed": 7, "failed": 3, "inconclusive": 0, "skipped": 0}
    assert by_key["node-ready", "instances join"].counts["inconclusive"] == 1
    assert by_key["files", "proxy added"].counts["skipped"] == 10 and len(by_key["files", "proxy added"].nodes) == 10


def test_what_did_not_pass_is_grouped_where_identical_failures_first() -> None:
    found = outcomes(_fleet(), ["failed", "inconclusive"])
    assert [(o.check, o.step, o.status, o.observed, o.nodes) for o in found] == [
        ("registry-env", "proxy added", "failed", "NO_PROXY=unset", ("127.10.0.3", "127.10.0.4", "127.10.0.5")),
        ("node-ready", "instances join", "inconclusive", "lab stalled", ("127.10.0.6",)),
        ("node-ready", "proxy added", "inconclusive", "lab stalled", ("127.10.0.6",))]
    # what differs only in the expected value is not one outcome: both are shown in full
    split = outcomes([_result(1, "reboots", "failed", "2"), _result(2, "reboots", "failed", "2", expected="0")],
                     ["failed"])
    assert [o.expected for o in split] == ["ok", "0"]


def test_passes_are_grouped_by_observation_the_largest_first_the_rest_counted() -> None:
    summaries = {(s.check, s.step): s for s in pass_summaries(_fleet(), shown=2)}
    converged = summaries["converged", "proxy added"]
    # 10 nodes settled after 0, 1, 2 or 3 s: 2, 3, 3, 2 nodes; the two largest shown, the rest counted
    assert [(o.observed, len(o.nodes)) for o in converged.shown] == [("settled after 1.00s", 3),
                                                                   ("settled after 2.00s", 3)]
    assert (converged.other_observations, converged.other_nodes) == (2, 4)
    registry = summaries["registry-env", "proxy added"]
    assert [len(o.nodes) for o in registry.shown] == [7] and registry.other_observations == 0
    assert ("files", "proxy added") not in summaries  # nothing passed there: nothing to group


def test_a_fleet_is_large_past_the_threshold() -> None:
    def scenario(nodes: int) -> ScenarioResult:
        return ScenarioResult("t", "w", "passed", [_result(n, "files") for n in range(1, nodes + 1)])
    assert not is_large(scenario(LARGE_FLEET)) and is_large(scenario(LARGE_FLEET + 1))


def test_a_convergence_curve_has_one_corner_per_pixel_column() -> None:
    assert merged_steps([3.0, 1.0, 2.0], longest=3.0, pixels=300) == [(1.0, 1), (2.0, 2), (3.0, 3)]
    times = [i / 1000 for i in range(1000)]  # a thousand nodes within one second
    corners = merged_steps(times, longest=1.0, pixels=10)
    assert len(corners) == 10 and corners[-1] == (0.9, 1000)  # every node still counted at the end
    assert [count for _, count in corners] == sorted(count for _, count in corners)
    assert merged_steps([], longest=0.0, pixels=10) == []
