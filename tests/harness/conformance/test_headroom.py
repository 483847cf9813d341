"""How close a run's steps came to their deadlines, read from its report: the slowest node of each
step against the step's deadline, the closest first; close from half of it on; past it only where the
judge's own stalls moved the deadline; a step where nodes did not converge first."""

from __future__ import annotations

from typing import Any

import pytest

from proxyfleet.harness.conformance.headroom import CLOSE, closest_step, step_headrooms
from proxyfleet.harness.conformance.results import ScenarioResult


def _scenario(name: str, *steps: dict[str, Any]) -> ScenarioResult:
    return ScenarioResult(name, "runtime-add", "passed", timeline=list(steps))


def _step(name: str, converged: dict[str, float], deadline: float | None) -> dict[str, Any]:
    step: dict[str, Any] = {"step": name, "converged_s": converged, "nodes": len(converged)}
    if deadline is not None:
        step["deadline_s"] = deadline
    return step


def test_the_slowest_node_of_each_step_against_its_deadline_closest_first() -> None:
    scenarios = [
        _scenario("test_a", _step("instances join", {"127.10.0.1": 2.0, "127.10.0.2": 14.7}, 60.0),
                  _step("proxy added", {"127.10.0.1": 30.0, "127.10.0.2": 9.0}, 148.0)),
        _scenario("test_b", _step("proxy added", {"127.10.0.1": 45.0}, 60.0)),
    ]
    steps = step_headrooms(scenarios)
    assert [(s.scenario, s.step, s.converged_s) for s in steps] == [
        ("test_b", "proxy added", 45.0), ("test_a", "instances join", 14.7), ("test_a", "proxy added", 30.0)]
    closest = closest_step(scenarios)
    assert closest is not None and closest.share == 0.75 and closest.close
    assert closest.describe().startswith("closest to a deadline: test_b, step 'proxy added': its last node "
                                         "converged after 45.0 s of 60 s (75%) — a machine half as fast")
    assert closest.style == "yellow"


def test_far_from_its_deadline_a_step_is_only_stated() -> None:
    closest = closest_step([_scenario("test_a", _step("proxy added", {"127.10.0.1": 14.7}, 60.0))])
    assert closest is not None and not closest.close and closest.style == "default"
    assert closest.describe() == ("closest to a deadline: test_a, step 'proxy added': its last node converged "
                                  "after 14.7 s of 60 s (24%)")
    at_half = closest_step([_scenario("test_a", _step("proxy added", {"127.10.0.1": 30.0}, 60.0))])
    assert at_half is not None and at_half.share == CLOSE and at_half.close


def test_past_its_deadline_only_by_the_judges_own_stall() -> None:
    closest = closest_step([_scenario("test_a", _step("proxy added", {"127.10.0.1": 63.0}, 60.0))])
    assert closest is not None and closest.share > 1
    assert closest.describe().endswith("(105%) — past it, by as long as the judge's own process stalled "
                                       "(the deadline moves by that)")


def test_a_step_is_measured_against_its_deadline_as_the_lab_s_stalls_had_moved_it() -> None:
    """At 1,000 nodes the lab's CPU does a live step's work and its stalls move the deadline as far
    as the machine is slow: 28.7 s of a 60 s deadline moved by 31.9 s is 31 %, not 48 %."""
    step = _step("new proxy CA added to the bundle", {"127.10.0.1": 20.0, "127.10.0.2": 28.7}, 60.0)
    step["deadline_moved_s"] = 31.9
    plain = _step("proxy added", {"127.10.0.1": 25.0}, 60.0)
    plain["deadline_moved_s"] = 0.6  # under a second: counted, but said as planned
    steps = step_headrooms([_scenario("test_a", step, plain)])
    assert [(s.step, s.allowed_s) for s in steps] == [("proxy added", 60.6), ("new proxy CA added to the bundle", 91.9)]
    moved = steps[1]
    assert moved.share == pytest.approx(28.7 / 91.9) and not moved.close
    assert moved.describe() == ("closest to a deadline: test_a, step 'new proxy CA added to the bundle': its last "
                                "node converged after 28.7 s of 60 s, a deadline the lab's own stalls had moved to "
                                "91.9 s (31%)")
    assert steps[0].describe().endswith("converged after 25.0 s of 60 s (41%)")


def test_a_step_where_nodes_never_converged_comes_first_and_says_how_many() -> None:
    failed = _step("proxy added", {"127.10.0.1": 3.0}, 60.0)
    failed["nodes"] = 3  # two of its nodes are not in converged_s: still off at the deadline
    none = {"step": "removed", "converged_s": {}, "nodes": 2, "deadline_s": 60.0}
    scenarios = [_scenario("test_a", _step("instances join", {"127.10.0.1": 59.0}, 60.0), failed),
                 _scenario("test_b", none)]
    steps = step_headrooms(scenarios)
    assert [(s.scenario, s.step, s.unconverged) for s in steps] == [
        ("test_a", "proxy added", 2), ("test_b", "removed", 2), ("test_a", "instances join", 0)]
    assert steps[0].close and steps[0].describe() == (
        "closest to a deadline: test_a, step 'proxy added': 2 of 3 node(s) did not converge (its deadline: 60 s; "
        "its failed checks say why)")


def test_steps_without_nodes_or_a_deadline_say_nothing() -> None:
    scenarios = [_scenario("test_a", {"step": "nothing to do", "converged_s": {}, "nodes": 0, "deadline_s": 60.0},
                           _step("older report", {"127.10.0.1": 3.0}, None)),
                 _scenario("test_b")]
    assert step_headrooms(scenarios) == [] and closest_step(scenarios) is None
