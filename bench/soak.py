"""A soak: the main job again and again while the machine is made busy beside it, counting runs that
failed and why — the measurement behind "a correct setup passes every time".

    python bench/soak.py [--runs 20] [--nodes 10] [--load "stress-ng --cpu 4"] [--json out.json] \
        [--keep soak-failures] [-- more conformance options]

Each run is ``proxyfleet conformance --nodes N`` with the reference reconciler; ``--load`` is a
command started before the first run and stopped after the last (default ``stress-ng --cpu
<twice the cores>``, Debian's stress-ng, which makes the load average about three times the cores with
the run itself). Prints one line per run — exit status, wall seconds, the load average, the
failed checks (node, step, observed) or the error — and a summary: runs, passed, failed,
inconclusive (exit 4), and each failure's cause; a failed run's JSON report and output are kept (``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _failures(report: dict[str, Any]) -> list[str]:
    found = []
    for scenario in report.get("scenarios", []):
        if scenario.get("error"):  # whole: its cause (a program's output) is often below the first line
            found.append(f"{scenario['name']}: " + "\n      ".join(scenario["error"].strip().splitlines()[:40]))
        for check in scenario.get("checks", []):
            if check["status"] in ("failed", "inconclusive"):
                nodes = ", ".join(check.get("nodes") or [check.get("node", "?")])  # grouped records, or old ones
                found.append(f"{scenario['workflow']} / {check['step']} / {check['check']} on {nodes} "
                             f"[{check['status']}]: {check['observed'][:200]}")
    return found


def run_once(nodes: int, extra: list[str], keep: Path | None, number: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="proxyfleet-soak-") as directory:
        report = Path(directory) / "r.json"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--nodes", str(nodes),
                               "--json", str(report), *extra], capture_output=True, text=True, cwd=directory,
                              timeout=7200)
        wall = time.monotonic() - started
        data = json.loads(report.read_text()) if report.exists() else {}
        if done.returncode != 0 and keep is not None:  # the evidence of a failed run, for its cause
            keep.mkdir(parents=True, exist_ok=True)
            if report.exists():
                (keep / f"run-{number}.json").write_bytes(report.read_bytes())
            (keep / f"run-{number}.stderr").write_text(done.stderr)
    return {"exit": done.returncode, "wall_s": round(wall, 1), "load": round(os.getloadavg()[0], 1),
            "failures": _failures(data) if data else [done.stderr.strip()[-300:]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--load", default=f"stress-ng --cpu {2 * (os.cpu_count() or 1)}",
                        help="a command that makes the machine busy beside the runs ('' for none)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", type=Path, default=Path("soak-failures"),
                        help="where a failed or inconclusive run's JSON report and output are kept")
    parser.add_argument("extra", nargs="*", help="more conformance options (after --)")
    args = parser.parse_args()
    load = subprocess.Popen(shlex.split(args.load), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True) if args.load else None
    runs = []
    try:
        for number in range(1, args.runs + 1):
            row = run_once(args.nodes, args.extra, args.keep, number)
            runs.append(row)
            print(f"run {number:3}: exit {row['exit']}  {row['wall_s']:7.1f} s  load {row['load']:5.1f}"
                  + "".join(f"\n    {f}" for f in row["failures"]), flush=True)
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait()
    passed = sum(1 for r in runs if r["exit"] == 0)
    inconclusive = sum(1 for r in runs if r["exit"] == 4)
    print(f"{len(runs)} run(s): {passed} passed, {len(runs) - passed - inconclusive} failed, "
          f"{inconclusive} inconclusive")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    sys.exit(0 if passed == len(runs) else 1)


if __name__ == "__main__":
    main()
