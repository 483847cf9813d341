"""How close a run's steps came to their deadlines: for each step, the seconds its last node took to
converge against the step's deadline. A correct reconciler passes only while every step stays under
its deadline, so the closest step says how much slower a machine could be before the same run
failed a correct setup — what a release gate's owner needs to know before the gate flakes, not after.

Read from a run's report alone (each step's ``converged_s`` and ``deadline_s``, both counted from the
moment the judge began waiting for the step), so it works on a saved ``--json`` report and on shard
reports merged from several machines. A deadline moves by the time the lab's own event loop could not
run (``converging.converge``), and where the lab's CPU does most of a step's work — at 1,000 nodes
nearly all of it — that moves it as far as a slower machine slows the step; so a step is measured
against its deadline as it stood when its last node converged (``deadline_moved_s``; reports written
before it was kept are measured against the deadline alone).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from proxyfleet.harness.conformance.results import ScenarioResult

# From this share of a deadline on, a run is said to be close to failing a correct setup: a CI
# machine half as fast as the one that ran it would not have made it.
CLOSE = 0.5
MOVED_SHOWN = 1.0  # a deadline moved less than this (a loaded 10-node lab's ordinary) is said as planned


@dataclass(frozen=True)
class StepHeadroom:
    """One step's slowest node against its deadline."""

    scenario: str
    step: str
    converged_s: float  # when the step's last node to converge did, after the judge began waiting
    deadline_s: float
    unconverged: int = 0  # nodes of the step that never converged (a failed step)
    nodes: int = 0
    moved_s: float = 0.0  # how far the lab's own stalls had moved the deadline when the last node converged

    @property
    def allowed_s(self) -> float:
        """The deadline as it stood when the step's last node converged."""
        return self.deadline_s + self.moved_s

    @property
    def share(self) -> float:
        """The part of the deadline (as the lab's stalls had moved it) the step used (over 1: the
        judge's own stalls extended a deadline a report did not record; infinite: some node never
        converged)."""
        return float("inf") if self.unconverged else self.converged_s / self.allowed_s

    @property
    def close(self) -> bool:
        """Whether the step used ``CLOSE`` of its deadline or more (or some node never converged)."""
        return self.share >= CLOSE

    @property
    def style(self) -> str:
        """How a console shows it: yellow once close."""
        return "yellow" if self.close else "default"

    def describe(self) -> str:
        """One line for a person: the step, how much of its deadline it used, and what to do if that
        is close."""
        where = f"closest to a deadline: {self.scenario}, step '{self.step}': "
        if self.unconverged:
            return where + (f"{self.unconverged} of {self.nodes} node(s) did not converge (its deadline: "
                            f"{self.deadline_s:g} s; its failed checks say why)")
        moved = (f", a deadline the lab's own stalls had moved to {self.allowed_s:.1f} s"
                 if self.moved_s >= MOVED_SHOWN else "")
        line = where + (f"its last node converged after {self.converged_s:.1f} s of {self.deadline_s:g} s{moved} "
                        f"({self.share:.0%})")
        if self.share > 1:
            return line + " — past it, by as long as the judge's own process stalled (the deadline moves by that)"
        if self.close:
            return line + (" — a machine half as fast may fail a correct setup here: give the run more CPU, fewer "
                           "labs at once (--workers) or a longer --converge-timeout")
        return line


def step_headrooms(scenarios: Iterable[ScenarioResult]) -> list[StepHeadroom]:
    """Every step with nodes to converge against a deadline, the closest to its deadline first
    (a step where some node never converged before any other)."""
    steps = []
    for scenario in scenarios:
        for step in scenario.timeline:
            converged = [s for s in (step.get("converged_s") or {}).values() if isinstance(s, int | float)]
            deadline, nodes, moved = step.get("deadline_s"), step.get("nodes"), step.get("deadline_moved_s")
            nodes = nodes if isinstance(nodes, int) else len(converged)
            if nodes and isinstance(deadline, int | float) and deadline > 0:
                steps.append(StepHeadroom(scenario.name, str(step.get("step", "")), float(max(converged, default=0.0)),
                                          float(deadline), max(0, nodes - len(converged)), nodes,
                                          float(moved) if isinstance(moved, int | float) and moved > 0 else 0.0))
    return sorted(steps, key=lambda s: (-s.share, s.scenario, s.step))


def closest_step(scenarios: Iterable[ScenarioResult]) -> StepHeadroom | None:
    """The step that came closest to its deadline, or None when no step had nodes to converge."""
    steps = step_headrooms(scenarios)
    return steps[0] if steps else None
