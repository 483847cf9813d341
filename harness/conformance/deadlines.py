"""How long a step may take to converge: a deadline that follows from what the step asks of the fleet.

A step that changes the proxy variables rolls every member it touches: each is drained (its
workload's pods evicted through their services' PodDisruptionBudgets of one: one eviction at a
time per service, and in a lab of up to 26 nodes one service spans the fleet), rebooted and its
services started again, in waves of maxUnavailable. A step that changes only trusted CAs is
applied live: no reboot, but each node is still visited, its store changed and verified, and looked
at by the judge — work on the lab's CPU that grows with the fleet (``LIVE_CHANGE_S`` a node). A
fixed deadline fits one fleet size: at 300 nodes the old 60 s failed a correct reconciler whose
rollout simply could not fit in it, and at 1,000 nodes a live CA change used 23 to 41 s of it.

The default deadline is therefore the step's plan, priced with the lab's own timings and a margin
(``WAVE_MARGIN`` per reboot wave, ``EVICTION_MARGIN`` per eviction, priced one at a time across
the fleet: exact for one service, an upper bound where several drain side by side; each live
change at the lab's price, added: the reconciler may apply them beside the rollout), never under
``FLOOR`` (a live change, the reconciler's reaction to the watch and its verification).
A step in which the scenario changed nodes out of band waits, on top, for the reconciler's resync
period (it notices drift only when it looks again; the lab's own at 1,000 nodes every 100 s, an
external one's as it declares), and counts each drifted node as one its repair may reboot.
``--converge-timeout`` is an explicit override. Time in which the lab's own event loop could not
run still moves the deadline (``converging.converge``); a reconciler's own slowness is never excused.

Pure: the judge fills in the plan and the timings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

# What set a deadline: the step's plan (or the least deadline), ``--converge-timeout``, or a stuck
# node's report wait (the judge's, when longer than the plan).
DeadlineKind = Literal["planned", "explicit", "stuck-report"]

FLOOR = 60.0  # the deadline of a step with no reboot, and the least of any step
# A wave takes the sum of the lab's boot timings once every node of it is back; under load (and
# with the reconciler's own looks between them) the measured waves take up to about twice that.
WAVE_MARGIN = 3.0
# One eviction: the pod's containers stop, its replacement starts elsewhere and is Ready before the
# budget allows the next.
EVICTION_MARGIN = 2.0
# One node's live change (trusted CAs only) on the lab's own CPU: the reconciler's look, apply and
# verification, and the judge's looks. Measured at 1,000 nodes (one lab, the reference reconciler):
# the last node of such a step after 22.9 s on a quiet two-core machine, 41.2 s beside
# ``stress-ng --cpu 2`` — 23 and 41 ms a node; priced at 2.4 to 4 times that. Up to 600 nodes the
# least deadline covers it.
LIVE_CHANGE_S = 0.1


@dataclass(frozen=True)
class RolloutTimings:
    """What the fleet's hosts take, in seconds (of time the lab can run)."""

    reboot_s: float  # from the reboot command until the node's kubelet reports Ready again
    eviction_s: float  # a guarded pod's containers stop (and its replacement starts)
    wave_overhead_s: float = 0.0  # the reconciler's own fixed cost per wave (its settle delay)
    live_s: float = 0.0  # one node's live change, no reboot (the lab's ``LIVE_CHANGE_S``)

    @property
    def wave_s(self) -> float:
        return self.reboot_s + self.wave_overhead_s


@dataclass(frozen=True)
class StepPlan:
    """What a step asks of the fleet."""

    rolling: int  # members whose proxy variables change: each drained and rebooted
    max_unavailable: int  # how many of them may be down or cordoned at once
    drifted: int = 0  # nodes changed out of band: each repaired at the reconciler's next resync
    resync_s: float = 0.0  # the reconciler's resync period (what a drifted node waits for first)
    live: int = 0  # members whose trusted CAs alone change: each applied without a reboot

    @property
    def waves(self) -> int:
        return math.ceil(self.rolling / max(1, self.max_unavailable)) if self.rolling else 0


@dataclass(frozen=True)
class Deadline:
    """A step's deadline and how it was arrived at (said in the report)."""

    seconds: float
    basis: str
    kind: DeadlineKind = "planned"


def _priced(plan: StepPlan, timings: RolloutTimings) -> float:
    """The plan's reboot waves, evictions and live changes, priced with the lab's timings and margins."""
    return (plan.waves * WAVE_MARGIN * timings.wave_s + plan.rolling * EVICTION_MARGIN * timings.eviction_s
            + plan.live * timings.live_s)


def stuck_deadline(plan: StepPlan, timings: RolloutTimings | None, report_wait: float, stuck: int) -> Deadline:
    """The deadline of a step in which ``stuck`` nodes never come back from their reboot: the
    reconciler reports them only once its own reboot timeout is over (``report_wait``: that and a
    margin), and a scenario may hold every other drain until then; the rest of the rollout comes
    after, with the slots the stuck nodes do not keep (each keeps its own). Without the hosts'
    timings (an existing cluster), the report wait and ``FLOOR``."""
    rest = StepPlan(plan.rolling, max(1, plan.max_unavailable - stuck), live=plan.live)
    after = _priced(rest, timings) if timings is not None else FLOOR
    return Deadline(math.ceil(report_wait + after),
                    f"the stuck node's report (up to {report_wait:g} s), then {rest.rolling} node(s) to reboot in "
                    f"{rest.waves} wave(s) of up to {rest.max_unavailable}"
                    + (f" and {rest.live} to change live" if rest.live else ""), "stuck-report")


def step_deadline(plan: StepPlan, timings: RolloutTimings | None, explicit: float | None = None) -> Deadline:
    """The step's deadline: ``explicit`` when given (``--converge-timeout``); ``FLOOR`` where the
    step reboots nothing or the hosts' timings are not known (an existing cluster); else its plan
    priced with the lab's timings and margins, at least ``FLOOR``. Where nodes drifted, the
    reconciler's resync period on top, and each drifted node priced as one more to reboot."""
    if explicit is not None:
        return Deadline(explicit, "--converge-timeout", "explicit")
    if not plan.drifted:
        return _rollout_deadline(plan, timings)
    repaired = _rollout_deadline(StepPlan(plan.rolling + plan.drifted, plan.max_unavailable, live=plan.live), timings)
    return Deadline(math.ceil(plan.resync_s + repaired.seconds),
                    f"the reconciler's resync ({plan.resync_s:g} s) to notice {plan.drifted} node(s) changed out "
                    f"of band, then: {repaired.basis}")


def _rollout_deadline(plan: StepPlan, timings: RolloutTimings | None) -> Deadline:
    if timings is None or not (plan.rolling or plan.live):
        return Deadline(FLOOR, "no reboot in this step" if timings is not None else "the default")
    planned = _priced(plan, timings)
    asked = " and ".join(part for part in (f"{plan.rolling} node(s) to reboot" if plan.rolling else "",
                                           f"{plan.live} to change live" if plan.live else "") if part)
    if planned <= FLOOR:
        return Deadline(FLOOR, f"{asked} fit in the least deadline")
    parts = []
    if plan.rolling:
        parts.append(f"{plan.waves} wave(s) of up to {plan.max_unavailable}, {WAVE_MARGIN:g} times "
                     f"{timings.wave_s:g} s each, and {plan.rolling} eviction(s) one at a time, "
                     f"{EVICTION_MARGIN:g} times {timings.eviction_s:g} s each")
    if plan.live:
        parts.append(f"{plan.live} live change(s), {timings.live_s:g} s each (the lab's CPU)")
    return Deadline(math.ceil(planned), f"{asked}: " + "; ".join(parts))
