"""Control-plane benchmark: N simulated kubelets heartbeating over real HTTPS through the lab
network, M watches on leases and nodes fanning the changes out. Reports sustained API writes per
second, watch events delivered per second, the process's CPU use and memory.

    python bench/bench_controlplane.py --nodes 1000 --heartbeat 2 --watchers 10 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.controlplane.resources import LEASES, NODES


async def run(nodes: int, heartbeat: float, watchers: int, seconds: float) -> dict[str, object]:
    started = time.monotonic()
    async with Lab(LabSettings(nodes=nodes, proxy=False, heartbeat=heartbeat,
                               node_grace=max(heartbeat * 6, 10))) as lab:
        store = lab.control_plane.store
        lab_start = time.monotonic() - started
        delivered = 0

        async def follow(resource_type: object) -> None:
            nonlocal delivered
            watcher = store.watch(resource_type, None, store.resource_version, lambda o: True)  # type: ignore[arg-type]
            while await watcher.queue.get() is not None:
                delivered += 1

        tasks = [asyncio.create_task(follow(LEASES if i % 2 else NODES)) for i in range(watchers)]
        ready_deadline = time.monotonic() + 120
        registering = True
        while registering:
            leases = len(store.list(LEASES, "kube-node-lease"))
            registering = leases < nodes and time.monotonic() < ready_deadline
            await asyncio.sleep(0.5)
        registered = time.monotonic() - started
        writes, events = store.writes, delivered
        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        result = {
            "nodes": nodes, "heartbeat_seconds": heartbeat, "watchers": watchers,
            "lab_start_seconds": round(lab_start, 1),
            "all_kubelets_registered_after_seconds": round(registered, 1),
            "api_writes_per_second": round((store.writes - writes) / wall, 1),
            "watch_events_delivered_per_second": round((delivered - events) / wall, 1),
            "api_requests_total": lab.control_plane.server.stats.requests,
            "process_cpu_percent_of_one_core": round(100 * cpu / wall, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        for task in tasks:
            task.cancel()
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--heartbeat", type=float, default=2.0)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.nodes, args.heartbeat, args.watchers, args.seconds)), indent=2))


if __name__ == "__main__":
    main()
