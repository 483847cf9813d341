"""The vendor matrix: a full conformance run (every scenario) through each proxy the README lists,
one after another, each timed (wall, and the CPU of the run and everything it started).

    python bench/bench_vendor_matrix.py [--nodes 10] [--proxy mitmdump --proxy squid …] [--json out.json]

Proxies: ``mitmdump`` (the lab's own), ``squid``, ``squid-image`` (Squid from an image built with
debootstrap, see tests/images.py), ``apache`` (with Basic authentication), ``trafficserver`` and
``tinyproxy``; their options are the tests' (tests/harness/cli/test_vendor_matrix.py,
test_conformance.py). Prints one row per proxy: result, scenarios passed, wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.cli.test_conformance import squid
from tests.harness.cli.test_vendor_matrix import VENDORS, vendor_options

PROXIES = ("mitmdump", "squid", "squid-image", "apache", "trafficserver", "tinyproxy")


def options(proxy: str, scratch: Path) -> list[str]:
    if proxy == "mitmdump":
        return []
    if proxy in ("squid", "squid-image"):
        image = None
        if proxy == "squid-image":
            from tests.images import SQUID_IMAGE, SQUID_PACKAGES, debian_image

            image = debian_image(SQUID_IMAGE, SQUID_PACKAGES)
        return squid(scratch, "tunnel", image=image)
    return vendor_options(scratch, VENDORS[proxy])


def run(proxy: str, nodes: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="proxyfleet-matrix-") as directory:
        scratch = Path(directory)
        report = scratch / "r.json"
        argv = [sys.executable, "-m", "proxyfleet.harness", "conformance", "--nodes", str(nodes), "--json",
                str(report), *options(proxy, scratch)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=scratch, timeout=3600)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary = json.loads(report.read_text())["summary"] if report.exists() else {}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"proxy": proxy, "exit": done.returncode, "summary": summary, "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--proxy", action="append", choices=PROXIES)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for proxy in args.proxy or PROXIES:
        row = run(proxy, args.nodes)
        rows.append(row)
        print(f"{row['proxy']:14} exit {row['exit']}  {row['summary']}  wall {row['wall_s']} s  cpu {row['cpu_s']} s",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    sys.exit(0 if all(r["exit"] == 0 for r in rows) else 1)


if __name__ == "__main__":
    main()
