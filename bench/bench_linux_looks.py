"""The judge's look at a Linux fleet, at scale: N simulated Linux nodes (as root), every node looked
at over SSH as a step's verification does (``NodeProbe.look``: one POSIX shell round trip each, the
extracted bundle sent only when its digest is new), twice — the first look carries each bundle,
the second only digests — and the lab's own evidence of every node read once (``LabHost``: service
environments, and what each unit's files give it at the next boot, for ``unit-environment``).

    python bench/bench_linux_looks.py --linux 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.conformance.labhosts import LabHost
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.simulators.fleet import Fleet, FleetSettings


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def timed_looks(probe: NodeProbe, addresses: list[str], concurrency: int) -> dict[str, float]:
    """Every node looked at once, ``concurrency`` at a time: wall and CPU seconds."""
    gate = asyncio.Semaphore(concurrency)

    async def one(address: str) -> None:
        async with gate:
            await probe.look(address)

    started, cpu = time.monotonic(), time.process_time()
    await asyncio.gather(*(one(a) for a in addresses))
    wall = time.monotonic() - started
    return {"seconds": round(wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
            "per_node_ms": round(wall / len(addresses) * 1000, 2)}


async def run(linux: int, flavour: str, concurrency: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        fleet = Fleet(FleetSettings(nodes=0, linux_nodes=linux, linux_flavour=flavour, state_dir=Path(directory)))
        started = time.monotonic()
        await fleet.start()
        start_seconds = time.monotonic() - started
        assert fleet.client_key is not None
        addresses = [n.config.address for n in fleet.linux_nodes]
        probe = NodeProbe(fleet.client_key, fleet.port, linux=addresses,
                          usernames={n.config.address: n.config.username for n in fleet.linux_nodes})
        try:
            first = await timed_looks(probe, addresses, concurrency)  # each node's bundle travels once
            second = await timed_looks(probe, addresses, concurrency)  # digests only
            began, cpu = time.monotonic(), time.process_time()
            for node in fleet.linux_nodes:
                host = LabHost.of(node)
                host.service_environments()
                host.boot_environments()
            evidence = {"seconds": round(time.monotonic() - began, 2),
                        "cpu_seconds": round(time.process_time() - cpu, 2)}
        finally:
            await probe.close()
            await fleet.stop()
        return {"linux_nodes": linux, "flavour": flavour, "concurrency": concurrency,
                "fleet_start_seconds": round(start_seconds, 2), "first_look": first, "second_look": second,
                "lab_evidence_every_node": evidence, "peak_rss_mib": round(peak_rss_mib(), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--linux", type=int, default=1000, help="Linux nodes")
    parser.add_argument("--linux-flavour", default="rhcos")
    parser.add_argument("--concurrency", type=int, default=64, help="looks in flight at once")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.linux, args.linux_flavour, args.concurrency)), indent=2))


if __name__ == "__main__":
    main()
