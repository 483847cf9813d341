"""A scenario on many nodes, summarised for people: per check and step how many nodes passed,
failed, were skipped or left inconclusive; the results that are not a pass, grouped where they are
identical; the passes grouped by identical observation ("298 nodes: Ready"). Pure: the HTML report
renders these for a fleet larger than ``LARGE_FLEET``, where a node x check matrix would be
megabytes that nobody reads row by row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from proxyfleet.harness.conformance.results import CHECK_FAMILIES, CheckResult, ScenarioResult

# More nodes than this and a scenario is summarised instead of drawn as a node x check matrix.
# The matrix costs ~8 KB of HTML per node and scenario (a cell per check with every step's expected
# and observed text as its tooltip; measured on a real 300-node run): all 12 scenarios of 40 nodes
# are ~3.9 MB, of 50 nodes ~4.9 MB, at the 5 MB a page should stay under with no room for failures'
# text. Forty rows are also about what a matrix can be read as one: a screen or two. At 40 and
# below the page is as it always was.
LARGE_FLEET = 40
NAMED_PASSES = 5  # a passing group this small names its nodes (an administrator's cordoned node)
PASS_GROUPS_SHOWN = 3  # per check and step, the largest groups of passes; the rest counted

STATUSES = ("passed", "failed", "inconclusive", "skipped")


def is_large(scenario: ScenarioResult) -> bool:
    """Whether ``scenario`` is summarised rather than drawn node by node."""
    return len({c.node for c in scenario.checks}) > LARGE_FLEET


@dataclass
class StepCounts:
    """How many results of one check after one step had each status, and on how many nodes."""

    check: str
    step: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    nodes: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Outcome:
    """Results of one check after one step that are identical but for their node."""

    check: str
    step: str
    status: str
    expected: str
    observed: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class PassSummary:
    """The passes of one check after one step: the largest groups of identical observations
    (``shown``), and how many other observations on how many nodes there were besides."""

    check: str
    step: str
    shown: tuple[Outcome, ...]
    other_observations: int
    other_nodes: int


def _check_order(checks: Iterable[str]) -> dict[str, int]:
    present = list(dict.fromkeys(checks))
    ordered = [f for f in CHECK_FAMILIES if f in present] + sorted(set(present) - set(CHECK_FAMILIES))
    return {check: index for index, check in enumerate(ordered)}


def _order(checks: Sequence[CheckResult]) -> tuple[dict[str, int], dict[str, int]]:
    """Report order of checks (``CHECK_FAMILIES``) and of steps (as they were run)."""
    steps = {step: index for index, step in enumerate(dict.fromkeys(c.step for c in checks))}
    return _check_order(c.check for c in checks), steps


def step_counts(checks: Sequence[CheckResult]) -> list[StepCounts]:
    """Per check (in report order) and step (in the order run), the results counted by status."""
    by_key: dict[tuple[str, str], StepCounts] = {}
    for result in checks:
        counted = by_key.setdefault((result.check, result.step), StepCounts(result.check, result.step))
        counted.counts[result.status] += 1
        counted.nodes.add(result.node)
    check_rank, step_rank = _order(checks)
    return sorted(by_key.values(), key=lambda s: (check_rank[s.check], step_rank[s.step]))


def outcomes(checks: Sequence[CheckResult], statuses: Iterable[str]) -> list[Outcome]:
    """The results with one of ``statuses``, identical ones (but for the node) as one outcome: in
    the order of ``statuses``, then check and step in report order, the most widespread first."""
    wanted = list(statuses)
    groups: dict[tuple[str, str, str, str, str], list[str]] = {}
    for result in checks:
        if result.status in wanted:
            key = (result.check, result.step, result.status, result.expected, result.observed)
            groups.setdefault(key, []).append(result.node)
    check_rank, step_rank = _order(checks)
    found = [Outcome(*key, nodes=tuple(dict.fromkeys(nodes))) for key, nodes in groups.items()]
    return sorted(found, key=lambda o: (wanted.index(o.status), check_rank[o.check], step_rank[o.step],
                                        -len(o.nodes)))


def pass_summaries(checks: Sequence[CheckResult], shown: int = PASS_GROUPS_SHOWN) -> list[PassSummary]:
    """Per check and step, the ``shown`` largest groups of identical passes and a count of the rest
    (a convergence time differs on nearly every node: those are counted, not listed)."""
    by_key: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes(checks, ["passed"]):
        by_key.setdefault((outcome.check, outcome.step), []).append(outcome)
    summaries = []
    for (check, step), found in by_key.items():  # already in report order, largest first
        rest = found[shown:]
        summaries.append(PassSummary(check, step, tuple(found[:shown]), len(rest), sum(len(o.nodes) for o in rest)))
    return summaries


def merged_steps(times: Sequence[float], longest: float, pixels: float) -> list[tuple[float, int]]:
    """A convergence curve's corners, ``(seconds, nodes converged by then)``, at most one per
    ``pixels``-wide column of a chart ``longest`` seconds wide: a thousand nodes draw the same
    line as their few hundred distinct columns."""
    corners: list[tuple[float, int]] = []
    column_width = (longest or 1.0) / max(pixels, 1.0)
    for count, seconds in enumerate(sorted(times), start=1):
        if corners and int(corners[-1][0] / column_width) == int(seconds / column_width):
            corners[-1] = (corners[-1][0], count)
        else:
            corners.append((seconds, count))
    return corners
