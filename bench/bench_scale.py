"""A conformance run at fleet size, whole or as shards one after another, measured: each part's wall
time, CPU (its whole process tree) and peak memory (the tree's summed resident set, sampled), then
the merged reports' sizes — the measurement behind issue 33's "a 1,000-node run as 12 shards, no
shard over 10 minutes".

    python bench/bench_scale.py --nodes 1000 [--shards 12] [--out scale-1000] [--json out.json] \
        [-- more conformance options, e.g. --workflow runtime-add]

With ``--shards 1`` (the default) it is one whole run. Each part is ``proxyfleet conformance --nodes
N --shard K/S --json … --html …``; with more than one part, ``proxyfleet report merge`` joins them
(``merged.json``, ``merged.html``). Prints one line per part and a summary; exits with the merged
run's code (the run's own: 0, 1, 4, or 130 if interrupted).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_SECONDS = 0.5


def _tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and every live descendant (from ``/proc``)."""
    parents: dict[int, int] = {}
    resident: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            statm = Path(f"/proc/{name}/statm").read_text().split()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(name)] = int(fields[1])
        resident[int(name)] = int(statm[1]) * PAGE
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += resident.get(pid, 0)
        pending += children.get(pid, [])
    return total


def run_part(command: list[str], cwd: Path) -> dict[str, Any]:
    """Run one part; its exit code, wall seconds, CPU seconds of its tree (every descendant it
    waited for) and the tree's peak resident memory."""
    peak = 0
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or []), daemon=True)
    reader.start()
    while process.poll() is None:
        peak = max(peak, _tree_rss(process.pid))
        time.sleep(SAMPLE_SECONDS)  # a sampling period, not a synchronisation
    # The exit status was collected by poll(); its rusage is in this process's children's total.
    reader.join()
    wall = time.monotonic() - started
    return {"exit": process.returncode, "wall_s": round(wall, 1), "peak_mib": round(peak / 2**20),
            "output_tail": "".join(output[-15:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=1, help="parts, run one after another")
    parser.add_argument("--out", type=Path, default=None, help="where the parts' reports go (default: scale-N)")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("extra", nargs="*", help="more conformance options (after --)")
    args = parser.parse_args()
    out: Path = (args.out or Path(f"scale-{args.nodes}")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    proxyfleet = [sys.executable, "-m", "proxyfleet.harness"]
    parts: list[dict[str, Any]] = []
    for number in range(1, args.shards + 1):
        name = f"shard-{number}-of-{args.shards}" if args.shards > 1 else "whole"
        command = [*proxyfleet, "conformance", "--nodes", str(args.nodes), "--json", str(out / f"{name}.json"),
                   "--html", str(out / f"{name}.html"), *args.extra]
        if args.shards > 1:
            command += ["--shard", f"{number}/{args.shards}"]
        cpu_before = _children_cpu()
        row = run_part(command, out)
        row.update(part=name, cpu_s=round(_children_cpu() - cpu_before, 1),
                   json_mb=_megabytes(out / f"{name}.json"), html_mb=_megabytes(out / f"{name}.html"))
        parts.append(row)
        print(f"{name}: exit {row['exit']}  {row['wall_s']:8.1f} s wall  {row['cpu_s']:8.1f} s CPU  "
              f"{row['peak_mib']:6} MiB peak  JSON {row['json_mb']} MB  HTML {row['html_mb']} MB", flush=True)
        if row["exit"] not in (0, 1, 4):
            print(row["output_tail"], flush=True)
    summary: dict[str, Any] = {"nodes": args.nodes, "shards": args.shards, "options": args.extra, "parts": parts,
                               "longest_part_s": max(p["wall_s"] for p in parts),
                               "wall_s": round(sum(p["wall_s"] for p in parts), 1),
                               "cpu_s": round(sum(p["cpu_s"] for p in parts), 1)}
    code = parts[0]["exit"]
    if args.shards > 1:
        merged = subprocess.run([*proxyfleet, "report", "merge", *(str(out / f"{p['part']}.json") for p in parts),
                                 "--json", str(out / "merged.json"), "--html", str(out / "merged.html")],
                                capture_output=True, text=True, cwd=out)
        code = merged.returncode
        summary.update(merged_exit=code, merged_json_mb=_megabytes(out / "merged.json"),
                       merged_html_mb=_megabytes(out / "merged.html"))
        if merged.stderr.strip():
            print(merged.stderr.strip()[-2000:])
    print(f"{args.shards} part(s) of a {args.nodes}-node run: {summary['wall_s']} s wall one after another "
          f"(longest part {summary['longest_part_s']} s), {summary['cpu_s']} s CPU; exit {code}"
          + (f"; merged JSON {summary['merged_json_mb']} MB, HTML {summary['merged_html_mb']} MB"
             if args.shards > 1 else ""))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    sys.exit(code)


def _children_cpu() -> float:
    """CPU seconds of every child process this one has waited for (and their waited descendants)."""
    usage = os.times()
    return usage.children_user + usage.children_system


def _megabytes(path: Path) -> float | None:
    return round(path.stat().st_size / 1e6, 2) if path.exists() else None


if __name__ == "__main__":
    main()
