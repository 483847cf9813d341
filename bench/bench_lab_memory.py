"""Labs one after another in one process, as an xdist worker of `proxyfleet conformance` runs them:
the process's memory after each lab has ended, and whether any ended lab is still alive.

    python bench/bench_lab_memory.py --nodes 100 --labs 5

Each lab starts (nodes joined, its proxy and origins up), serves one request from the internet
registry, and stops. A process whose memory climbs lab after lab, or any "labs alive" above zero,
keeps ended labs reachable (aiohttp's process-wide middleware-chain cache did, until the origins
emptied it: a worker reached 3.5 GB after eight 1,000-node labs).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
import weakref
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.lab import Lab, LabSettings


def _status_mib(field: str) -> float:
    """A VmRSS/VmHWM-style line of /proc/self/status, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise KeyError(field)


async def one_lab(nodes: int) -> weakref.ref[Lab]:
    """Start a lab, fetch from its internet registry once (the origins' middleware runs), stop it."""
    async with Lab(LabSettings(nodes=nodes)) as lab:
        lab.set_egress_firewall(False)
        registry = lab.origins.server("quay.io")
        async with aiohttp.ClientSession() as session, session.get(
                f"https://{registry.address}:{registry.port}/v2/", ssl=False, server_hostname="quay.io") as answer:
            answer.raise_for_status()
        return weakref.ref(lab)


async def run(nodes: int, labs: int) -> dict[str, object]:
    ended: list[weakref.ref[Lab]] = []
    rows = []
    for index in range(labs):
        started = time.monotonic()
        ended.append(await one_lab(nodes))
        gc.collect()
        rows.append({"lab": index + 1, "seconds": round(time.monotonic() - started, 1),
                     "rss_mib": _status_mib("VmRSS"), "peak_rss_mib": _status_mib("VmHWM"),
                     "labs_alive": sum(1 for lab in ended if lab() is not None)})
    return {"nodes": nodes, "labs": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--labs", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.nodes, args.labs)), indent=2))


if __name__ == "__main__":
    main()
