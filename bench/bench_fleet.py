"""Fleet benchmark: start-up time and peak memory for N nodes (Windows, and Linux beside them),
then SSH connect + one command per second from a separate client process.

    python bench/bench_fleet.py --nodes 1000 --seconds 10 --concurrency 64
    python bench/bench_fleet.py --nodes 0 --linux 1000 --seconds 10   # as root: Linux nodes
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
                    # Windows upper-cases its computer name; a Linux node's is its own, as given
                    wanted = node["name"].upper() if node["kind"] == "windows" else node["name"]
                    assert result.stdout.strip() == wanted, (result.stdout, wanted)
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


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def holders_rss_mib(fleet: Fleet) -> float:
    """What the Linux nodes' namespace holders take together (each is its own process)."""
    total_kib = 0
    for node in fleet.linux_nodes:
        status = Path(f"/proc/{node.mounts.holder_pid}/status").read_text()
        total_kib += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return total_kib / 1024


async def run(nodes: int, linux: int, flavour: str, seconds: float, concurrency: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        baseline = peak_rss_mib()
        started = time.monotonic()
        cpu_started = time.process_time()
        children_started = children_cpu_seconds()
        fleet = Fleet(FleetSettings(nodes=nodes, linux_nodes=linux, linux_flavour=flavour,
                                    state_dir=Path(directory)))
        await fleet.start()
        start_seconds = time.monotonic() - started
        start_cpu = time.process_time() - cpu_started
        start_children_cpu = children_cpu_seconds() - children_started
        after_start = peak_rss_mib()
        holders = holders_rss_mib(fleet)
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
            "linux_nodes": linux,
            "start_seconds": round(start_seconds, 2),
            "start_cpu_seconds": round(start_cpu, 2),
            # the programs a Linux node's start runs (unshare, mount, update-ca-certificates …)
            "start_child_cpu_seconds": round(start_children_cpu, 2),
            "namespace_holders_rss_mib": round(holders, 1),
            "peak_rss_mib_after_start": round(after_start, 1),
            "rss_mib_for_fleet": round(after_start - baseline, 1),
            "peak_rss_mib_under_load": round(peak_rss_mib(), 1),
            "ssh_connect_plus_command": load,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--linux", type=int, default=0, help="Linux nodes beside the Windows ones")
    parser.add_argument("--linux-flavour", default="rhcos")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.nodes, args.linux, args.linux_flavour, args.seconds, args.concurrency)),
                     indent=2))


if __name__ == "__main__":
    main()
