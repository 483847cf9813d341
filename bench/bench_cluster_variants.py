"""Which broken operators a run against an existing cluster still catches: every reconciler variant
runs as the "cluster's operator" (``proxyfleet reconcile --variant``) beside ``proxyfleet up
--reconciler none``, and ``proxyfleet conformance --kubeconfig`` judges it from outside with every
workflow an existing cluster runs (or those named). Prints, per variant, the exit status, the checks
that failed and the seconds.

    python bench/bench_cluster_variants.py [--parallel 3] [--variant NAME ...] [--workflow NAME ...] [--json out.json]

(The lab's own conformance run catches every variant; the README lists which this one cannot, and
why.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.reconciler import VARIANTS
from proxyfleet.harness.reconciler.linuxvariants import LINUX_VARIANTS
from tests.harness.cli.outside import outside_lab


def judge(variant: str, workflows: list[str]) -> dict[str, object]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="proxyfleet-bench-") as scratch:
        root = Path(scratch)
        with outside_lab(root, variant) as lab:
            report = root / "r.json"
            chosen = [a for w in workflows for a in ("--workflow", w)]
            run = subprocess.run(lab.conformance_args(*chosen, "--json", str(report)), capture_output=True,
                                 text=True, timeout=1800)
        failed = sorted({c["check"] for s in json.loads(report.read_text())["scenarios"] for c in s["checks"]
                         if c["status"] == "failed"}) if report.exists() else []
    return {"variant": variant, "exit": run.returncode, "failed": failed,
            "seconds": round(time.monotonic() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--workflow", action="append", default=[], help="only these (default: every one)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # the Linux variants differ only on Linux nodes, which an existing cluster's run does not judge yet
    variants = args.variant or sorted(set(VARIANTS) - set(LINUX_VARIANTS))
    with ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(lambda variant: judge(variant, args.workflow), variants))
    for result in results:
        caught = "caught" if result["exit"] == 1 and result["failed"] else \
            "passed" if result["exit"] == 0 else f"exit {result['exit']}"
        print(f"{result['variant']:28} {caught:7} {result['seconds']:6}s  {', '.join(result['failed'])}")  # type: ignore[arg-type]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
