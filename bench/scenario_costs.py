"""Print the measured-cost table of ``harness/conformance/scenariocosts.py`` from a ``--json``
report of a run of every scenario (``proxyfleet conformance --nodes 10 --json r.json``, and again
with ``--nodes 300``): each scenario's seconds, longest first, to paste over ``SECONDS`` (10 nodes)
or ``SECONDS_AT_300``.

    python bench/scenario_costs.py r.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def table(report: dict[str, object]) -> str:
    """The dict literal for the scenarios of ``report``: ``SECONDS`` for a 10-node run,
    ``SECONDS_AT_<nodes>`` for another."""
    scenarios = report.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios:
        raise SystemExit("the report has no scenarios")
    costs = sorted(((str(s["name"]), float(s["duration_s"])) for s in scenarios), key=lambda c: (-c[1], c[0]))
    lines = [f"    {name!r}: {seconds:.1f}," for name, seconds in costs]
    name = "SECONDS" if report.get("nodes") == 10 else f"SECONDS_AT_{report.get('nodes')}"
    return f"{name}: dict[str, float] = {{\n" + "\n".join(lines).replace("'", '"') + "\n}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    data = json.loads(Path(sys.argv[1]).read_text())
    print(f"# {data.get('nodes')} nodes, proxyfleet {data.get('version')}")
    print(table(data))
