"""``proxyfleet report merge``: the reports of a sharded run (``--shard K/N`` on N machines) joined
into the report of one run, as Playwright's ``merge-reports`` joins its shards.

Only the shards of one run are joined: the same proxyfleet version, nodes per lab, reconciler and
options, every part of the same N present once, no scenario in two of them. Anything else is a
:class:`MergeError` naming the report and what differs — a merge that silently joined two runs
(or left a failed shard's part out) would make a gate pass that never ran.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from proxyfleet.harness.conformance.results import INTERRUPTED_EXIT, ConformanceRun

# worst first: a failure, a cluster still rolling, a starved lab, a pass
# the merged run's exit code is its parts' worst: a failure (1, or any code not listed) over an
# interrupted part, over a cluster still rolling (3), over inconclusive, over a pass
_SEVERITY = {0: 0, 4: 1, 3: 2, INTERRUPTED_EXIT: 3}


class MergeError(ValueError):
    """Reports that are not the shards of one run."""


def _without_shard(config: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kept = copy.deepcopy(config)
    kept.get("lab", {}).pop("shard", None)
    return {group: keys for group, keys in kept.items() if keys}


def merge(reports: Sequence[tuple[str, ConformanceRun]]) -> ConformanceRun:
    """One run from its shards' reports (``(name, run)``: the name is used in errors)."""
    if not reports:
        raise MergeError("no report to merge")
    first_name, first = reports[0]
    parts: dict[int, tuple[str, ConformanceRun]] = {}
    total = None
    owner: dict[str, str] = {}
    for name, run in reports:
        if len(run.shards) != 1:
            raise MergeError(f"{name} is not one shard's report (proxyfleet conformance --shard K/N --json): "
                             + ("it is a merged report" if run.shards else "it was not sharded"))
        for what, mine, theirs in (("proxyfleet version", run.version, first.version),
                                   ("nodes per lab", run.nodes, first.nodes),
                                   ("Linux nodes per lab", run.linux_nodes, first.linux_nodes),
                                   ("Linux flavour", run.linux_flavour, first.linux_flavour),
                                   ("reconciler", run.variant, first.variant),
                                   ("options", _without_shard(run.config), _without_shard(first.config))):
            if mine != theirs:
                raise MergeError(f"{name}: {what} {mine!r}, but {first_name} has {theirs!r} (shards of one run only)")
        index, of = int(run.shards[0]["index"]), int(run.shards[0]["total"])
        if total is not None and of != total:
            raise MergeError(f"{name} is part {index}/{of}, but {first_name} is one of {total} parts")
        total = of
        if index in parts:
            raise MergeError(f"{name} and {parts[index][0]} are both part {index}/{of}")
        parts[index] = (name, run)
        for scenario in run.scenarios:
            if scenario.name in owner:
                raise MergeError(f"the scenario {scenario.name} is in both {owner[scenario.name]} and {name}")
            owner[scenario.name] = name
    assert total is not None
    missing = [f"{k}/{total}" for k in range(1, total + 1) if k not in parts]
    if missing:
        raise MergeError(f"part(s) {', '.join(missing)} missing: a run is merged from all {total} of its parts")
    ordered = [parts[k][1] for k in sorted(parts)]
    merged = ConformanceRun(nodes=first.nodes, variant=first.variant, linux_nodes=first.linux_nodes,
                            linux_flavour=first.linux_flavour,
                            scenarios=[s for run in ordered for s in run.scenarios],
                            duration_s=max(run.duration_s for run in ordered),  # side by side: the longest
                            config=_without_shard(first.config), version=first.version)
    merged.shards = [{"index": k, "total": total, "duration_s": round(parts[k][1].duration_s, 3),
                      "scenarios": [s.name for s in parts[k][1].scenarios]} for k in sorted(parts)]
    merged.command_exit = max((run.reported_exit for run in ordered), key=lambda code: _SEVERITY.get(code, 4))
    return merged
