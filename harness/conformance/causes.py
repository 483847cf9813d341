"""Failures grouped by cause: one line per scenario by step by check by observed pattern, with the
nodes it hit — "registry-env on 10 nodes after 'proxy added': NO_PROXY joined with ';'" instead of
ten rows that differ only in the node. Pure: the terminal (``proxyfleet report show``) and the
HTML report print the same groups.

Two results share a cause when their observed text is equal once what names the node is taken out
(its address, its host and Node names) and durations are (a node that settled after 61.2 s and one
after 63.0 s failed alike). The line shows the first node's own text, unmasked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun

_ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
_NODE_NAME = re.compile(r"\bwin-\d+\b", re.IGNORECASE)
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b")
SHOWN_NODES = 8  # nodes named on a cause's line; the rest counted


def pattern(observed: str, node: str = "") -> str:
    """``observed`` without what differs from node to node of one cause (``node`` itself, as a
    real cluster's node may be named anything)."""
    if node:
        observed = observed.replace(node, "<node>")
    return _DURATION.sub("<duration>", _NODE_NAME.sub("<node>", _ADDRESS.sub("<address>", observed)))


@dataclass(frozen=True)
class Cause:
    """Results of one check after one step of one scenario that failed (or stayed inconclusive)
    alike, and the nodes they were on."""

    scenario: str
    workflow: str
    step: str
    check: str
    status: str
    observed: str  # the first node's, as it was reported
    expected: str
    nodes: tuple[str, ...]

    def describe(self) -> str:
        """One line: what failed, on how many nodes, after which step, and what was seen."""
        count = f"{len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}"
        after = f" after {self.step!r}" if self.step else ""
        said = "" if self.status == "failed" else f" ({self.status})"
        return f"{self.check}{said} on {count}{after} ({self.workflow}): {self.observed}"

    def node_list(self) -> str:
        shown = ", ".join(self.nodes[:SHOWN_NODES])
        more = len(self.nodes) - SHOWN_NODES
        return shown + (f" and {more} more" if more > 0 else "")


def _matches(result: CheckResult, nodes: Iterable[str], checks: Iterable[str]) -> bool:
    wanted_nodes, wanted_checks = set(nodes), set(checks)
    return (not wanted_nodes or result.node in wanted_nodes) and (not wanted_checks or result.check in wanted_checks)


def failure_causes(run: ConformanceRun, nodes: Iterable[str] = (), checks: Iterable[str] = ()) -> list[Cause]:
    """The run's failed and inconclusive results grouped by cause, the most widespread first
    (failures before inconclusive ones); only ``nodes``/``checks`` when given."""
    nodes, checks = tuple(nodes), tuple(checks)
    groups: dict[tuple[str, str, str, str, str], list[CheckResult]] = {}
    owner: dict[tuple[str, str, str, str, str], tuple[str, str]] = {}
    for scenario in run.scenarios:
        for result in scenario.checks:
            if result.status not in ("failed", "inconclusive") or not _matches(result, nodes, checks):
                continue
            key = (scenario.name, result.step, result.check, result.status, pattern(result.observed, result.node))
            groups.setdefault(key, []).append(result)
            owner[key] = (scenario.name, scenario.workflow)
    causes = [Cause(scenario=owner[key][0], workflow=owner[key][1], step=key[1], check=key[2], status=key[3],
                    observed=results[0].observed, expected=results[0].expected,
                    nodes=tuple(dict.fromkeys(r.node for r in results)))
              for key, results in groups.items()]
    return sorted(causes, key=lambda c: (c.status != "failed", -len(c.nodes), c.workflow, c.check, c.step))
