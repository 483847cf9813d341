"""A step's deadline follows from what it asks of the fleet (pure)."""

from __future__ import annotations

import pytest

from proxyfleet.harness.conformance.deadlines import (
    EVICTION_MARGIN,
    FLOOR,
    LIVE_CHANGE_S,
    WAVE_MARGIN,
    RolloutTimings,
    StepPlan,
    step_deadline,
    stuck_deadline,
)

# The lab's defaults: shutdown 0.2 + boot 0.6 + 4 service stages of 0.25 + a 1 s kubelet lease
# period; a pod's containers stop in 1 s; the reconciler settles 0.3 s per wave.
LAB = RolloutTimings(reboot_s=2.8, eviction_s=1.0, wave_overhead_s=0.3)


def test_a_step_without_a_reboot_has_the_floor() -> None:
    deadline = step_deadline(StepPlan(rolling=0, max_unavailable=5), LAB)
    assert deadline.seconds == FLOOR
    assert "no reboot" in deadline.basis


def test_a_small_rollout_fits_in_the_floor() -> None:
    # 10 nodes in two waves of 5 (the main job): what 60 s always held; in five waves of 2 (faults)
    # a little more
    assert step_deadline(StepPlan(10, 5), LAB).seconds == FLOOR
    assert FLOOR < step_deadline(StepPlan(10, 2), LAB).seconds < 1.2 * FLOOR


@pytest.mark.parametrize("nodes", [100, 300, 1000])
def test_the_deadline_grows_with_the_nodes_to_reboot(nodes: int) -> None:
    deadline = step_deadline(StepPlan(nodes, nodes // 2), LAB)
    # two waves and one eviction per node, each with its margin
    assert deadline.seconds == pytest.approx(2 * WAVE_MARGIN * 3.1 + nodes * EVICTION_MARGIN * 1.0, abs=1)
    assert deadline.seconds > FLOOR
    assert f"{nodes} node(s) to reboot: 2 wave(s) of up to {nodes // 2}" in deadline.basis


def test_more_waves_with_a_smaller_budget() -> None:
    wide, narrow = step_deadline(StepPlan(100, 50), LAB), step_deadline(StepPlan(100, 2), LAB)
    assert narrow.seconds > wide.seconds
    assert "50 wave(s) of up to 2" in narrow.basis
    assert StepPlan(101, 2).waves == 51
    assert StepPlan(5, 0).waves == 5  # a budget of 0 is one at a time, never a division by zero


def test_an_explicit_timeout_overrides_the_plan() -> None:
    deadline = step_deadline(StepPlan(1000, 500), LAB, explicit=42.0)
    assert (deadline.seconds, deadline.basis) == (42.0, "--converge-timeout")


def test_unknown_host_timings_keep_the_default() -> None:
    # an existing cluster: its hosts' reboot times are not known to the judge
    assert step_deadline(StepPlan(300, 1), None).seconds == FLOOR


def test_a_stuck_nodes_step_waits_for_its_report_then_the_rest_of_the_rollout() -> None:
    # maxUnavailable 2, one node stuck: it keeps its slot, the other 9 roll one at a time after the report
    deadline = stuck_deadline(StepPlan(10, 2), LAB, report_wait=70.0, stuck=1)
    assert deadline.kind == "stuck-report"
    assert deadline.seconds == pytest.approx(70 + 10 * WAVE_MARGIN * 3.1 + 10 * EVICTION_MARGIN * 1.0, abs=1)
    assert deadline.seconds > 70 + step_deadline(StepPlan(10, 2), LAB).seconds - FLOOR
    assert "10 node(s) to reboot in 10 wave(s) of up to 1" in deadline.basis
    # never a budget of 0, however many are stuck; an existing cluster's timings unknown: the least deadline after
    assert "wave(s) of up to 1" in stuck_deadline(StepPlan(3, 1), LAB, 70.0, 2).basis
    assert stuck_deadline(StepPlan(3, 1), None, 70.0, 1).seconds == 70 + FLOOR


def test_a_step_with_drifted_nodes_waits_for_the_reconcilers_resync_first() -> None:
    # Nodes changed out of band are repaired only when the reconciler looks again: its resync
    # period comes first, then each drifted node priced as one more reboot.
    plain = step_deadline(StepPlan(0, 5), LAB)
    drifted = step_deadline(StepPlan(0, 5, drifted=2, resync_s=100.0), LAB)
    assert drifted.seconds == plain.seconds + 100 == FLOOR + 100
    assert drifted.basis.startswith("the reconciler's resync (100 s) to notice 2 node(s) changed out of band")
    assert "2 node(s) to reboot fit in the least deadline" in drifted.basis
    # a large repair (and rollout) beside it: priced with the drifted nodes as reboots
    both = step_deadline(StepPlan(100, 2, drifted=100, resync_s=10.0), LAB)
    assert both.seconds == pytest.approx(10 + step_deadline(StepPlan(200, 2), LAB).seconds, abs=1)
    # --converge-timeout still overrides everything; no drift, no resync
    assert step_deadline(StepPlan(0, 5, drifted=2, resync_s=100.0), LAB, explicit=42.0).seconds == 42.0
    assert step_deadline(StepPlan(0, 5, resync_s=100.0), LAB).seconds == FLOOR


def test_a_live_ca_change_is_priced_by_the_nodes_it_changes() -> None:
    """No reboot, but each node is visited, changed, verified and looked at on the lab's CPU: up to
    600 nodes the least deadline holds it, at 1,000 nodes (where a correct reconciler's last node
    came after 23-41 s) it is priced a node at a time; a rollout beside it adds its own price."""
    lab = RolloutTimings(reboot_s=2.8, eviction_s=1.0, wave_overhead_s=0.3, live_s=LIVE_CHANGE_S)
    assert step_deadline(StepPlan(0, 5, live=10), lab).seconds == FLOOR
    fits = step_deadline(StepPlan(0, 5, live=600), lab)
    assert fits.seconds == FLOOR and fits.basis == "600 to change live fit in the least deadline"
    big = step_deadline(StepPlan(0, 40, live=1000), lab)
    assert big.seconds == 1000 * LIVE_CHANGE_S > 2 * 41.2
    assert big.basis == "1000 to change live: 1000 live change(s), 0.1 s each (the lab's CPU)"
    both = step_deadline(StepPlan(300, 2, live=1000), lab)
    assert both.seconds == pytest.approx(step_deadline(StepPlan(300, 2), lab).seconds + 1000 * LIVE_CHANGE_S, abs=1)
    assert both.basis.startswith("300 node(s) to reboot and 1000 to change live: 150 wave(s) of up to 2")
    # an existing cluster's hosts are not the lab's: the least deadline, unless given one
    assert step_deadline(StepPlan(0, 5, live=1000), None).seconds == FLOOR
    assert step_deadline(StepPlan(0, 5, live=1000), lab, explicit=42.0).seconds == 42.0
    # a stuck node's step keeps the live changes' price after its report
    stuck = stuck_deadline(StepPlan(0, 2, live=1000), lab, 70.0, 1)
    assert stuck.seconds == 70 + 1000 * LIVE_CHANGE_S and stuck.basis.endswith("and 1000 to change live")
