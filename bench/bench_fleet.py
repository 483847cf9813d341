"""Fleet benchmark: start-up time and peak memory for N nodes, then SSH connect + one command
per second from a separate client process.

    python bench/bench_fleet.py --nodes 1000 --seconds 10 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.simulators.fleet import Fleet, FleetSettings

CLIENT = textwrap.dedent("""
    import asyncio, json, sys, time
    import asyncssh

    async def main(manifest_path, seconds, concurrency):
        manifest = json.load(open(manifest_path))
        key = asyncssh.read_private_key(manifest["private_key"])
        nodes = manifest["nodes"]
        done = 0
        latencies = []
        deadline = time.monotonic() + seconds

        async def worker(offset):
            nonlocal done
            index = offset
            while time.monotonic() < deadline:
                node = nodes[index % len(nodes)]
                index += concurrency
                started = time.monotonic()
                known = asyncssh.import_known_hosts(
                    f"[{node['address']}]:{node['port']} {node['host_key']}\\n")
                async with asyncssh.connect(node["address"], node["port"], username=node["username"],
                                            client_keys=[key], known_hosts=known, agent_path=None,
                                            config=[]) as conn:
                    result = await conn.run("hostname", check=True)
                    assert result.stdout.strip() == node["name"].upper()
                latencies.append(time.monotonic() - started)
                done += 1

        started = time.monotonic()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        elapsed = time.monotonic() - started
        latencies.sort()
        print(json.dumps({"operations": done, "seconds": round(elapsed, 2),
                          "per_second": round(done / elapsed, 1),
                          "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
                          "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1)}))

    asyncio.run(main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])))
""")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run(nodes: int, seconds: float, concurrency: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        baseline = peak_rss_mib()
        started = time.monotonic()
        cpu_started = time.process_time()
        fleet = Fleet(FleetSettings(nodes=nodes, state_dir=Path(directory)))
        await fleet.start()
        start_seconds = time.monotonic() - started
        start_cpu = time.process_time() - cpu_started
        after_start = peak_rss_mib()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", CLIENT, str(Path(directory) / "fleet.json"), str(seconds),
                str(concurrency), stdout=asyncio.subprocess.PIPE)
            out, _ = await process.communicate()
            load = json.loads(out)
        finally:
            await fleet.stop()
        return {
            "nodes": nodes,
            "start_seconds": round(start_seconds, 2),
            "start_cpu_seconds": round(start_cpu, 2),
            "peak_rss_mib_after_start": round(after_start, 1),
            "rss_mib_for_fleet": round(after_start - baseline, 1),
            "peak_rss_mib_under_load": round(peak_rss_mib(), 1),
            "ssh_connect_plus_command": load,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.nodes, args.seconds, args.concurrency)), indent=2))


if __name__ == "__main__":
    main()
