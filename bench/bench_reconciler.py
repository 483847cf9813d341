"""Reconciler benchmark: how long a proxy change takes to converge on N nodes.

The lab (control plane, fleet, kubelets) runs in this process; the reconciler runs as
``proxyfleet reconcile`` in a second process, as it would against a real cluster, so its CPU is
measured on its own. Phases: first contact with a proxy-less cluster (no reboot expected), then
a runtime proxy add (one reboot per node) with a production-sized trust bundle: the user's CAs
plus the cluster's whole public root set, ``--bundle-certificates`` in all (150 by default), on
the lab's harsh defaults (mixed cmd.exe/PowerShell default shells, services that start after
sshd, Restart-Computer that sometimes returns no exit status). Convergence is measured from the
moment the Proxy is written until every Node carries ``proxyfleet.io/https-proxy`` with the new
value (written only after the reboot and the fresh-session verification).

    python bench/bench_reconciler.py --nodes 100 --max-unavailable 10 --reboot-seconds 1
    python bench/bench_reconciler.py --nodes 1000 --max-unavailable 100 --reboot-seconds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

import trustme

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.reconciler.reporting import APPLIED_PROXY
from proxyfleet.simulators.controlplane.resources import NODES
from proxyfleet.simulators.pki import public_roots

PROXY_URL = "http://proxy.corp.internal:3128"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def wait_for(condition: object, limit: float, what: str) -> float:
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        if time.monotonic() - started > limit:
            raise TimeoutError(f"{what} did not happen within {limit} s")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def run(nodes: int, max_unavailable: int, reboot_seconds: float, limit: float,
              bundle_certificates: int) -> dict[str, object]:
    settings = LabSettings(nodes=nodes, proxy=False, reboot_duration=reboot_seconds, shutdown_delay=0.1,
                           heartbeat=10.0, node_grace=600.0)
    async with Lab(settings) as lab:
        store = lab.control_plane.store
        members = list(lab.fleet.nodes)
        await admin.set_ssh_key(lab.api(), lab.fleet.client_key_path.read_bytes())
        await admin.set_instances(lab.api(), [(n.address, "Administrator") for n in members])

        def annotated(value: str) -> bool:
            """Every Node says ``value`` was verified (read in place: this poll must not cost the lab)."""
            for member in members:
                stored = store.peek(NODES, "", member.name)
                if stored is None or (stored["metadata"].get("annotations") or {}).get(APPLIED_PROXY) != value:
                    return False
            return True

        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "proxyfleet.harness", "reconcile",
            "--kubeconfig", str(lab.control_plane.kubeconfig_path),
            "--ssh-port", str(lab.fleet.port), "--max-unavailable", str(max_unavailable),
            "--resync-seconds", "3600", "--service-poll-seconds", "0.5",
            # every reboot is drained first; the lab's pods start at once, so retry refusals quickly
            "--drain-retry-seconds", "0.1",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            first_contact = await wait_for(lambda: annotated("none"), limit, "first contact")
            boots_before = [len(n.machine.boots) for n in members]
            connections = sum(n.ssh_connections for n in members)
            commands = sum(n.ssh_commands for n in members)
            reconciler_cpu, lab_cpu = cpu_seconds(process.pid), time.process_time()

            system = len(public_roots()) + 1  # the public root set and the lab's public CA
            extra = max(1, bundle_certificates - system)
            user_cas = [trustme.CA(organization_name=f"corp CA {i}") for i in range(extra)]
            await admin.set_trusted_ca(lab.api(), "".join(ca.cert_pem.bytes().decode() for ca in user_cas))
            await admin.set_proxy(lab.api(), http_proxy=PROXY_URL, https_proxy=PROXY_URL,
                                  no_proxy=".corp.internal", trusted_ca="corp-ca")
            published = time.monotonic()
            await wait_for(lambda: annotated(PROXY_URL), limit, "convergence")
            converge = time.monotonic() - published  # from the spec write, status publication included
            reconciler_cpu = cpu_seconds(process.pid) - reconciler_cpu
            lab_cpu = time.process_time() - lab_cpu
            reboots = [len(n.machine.boots) - b for n, b in zip(members, boots_before, strict=True)]
            down = sorted((o.down_at, o.up_at) for n in members for o in n.outages)
            peak = max_overlap(down)
        finally:
            process.send_signal(signal.SIGTERM)
            await process.wait()
        return {
            "nodes": nodes, "max_unavailable": max_unavailable, "reboot_seconds": reboot_seconds,
            "bundle_certificates": system + len(user_cas),
            "default_shells": sorted({n.config.default_shell for n in members}),
            "sessions_ended_without_exit_status": sum(n.lost_exit_statuses for n in members),
            "first_contact_seconds": round(first_contact, 1),
            "proxy_change_converged_seconds": round(converge, 1),
            "reboots_per_node": sorted(set(reboots)),
            "most_nodes_down_at_once": peak,
            "ssh_connections_per_node_for_the_change":
                round((sum(n.ssh_connections for n in members) - connections) / nodes, 2),
            "ssh_commands_per_node_for_the_change": round((sum(n.ssh_commands for n in members) - commands) / nodes, 2),
            "reconciler_cpu_seconds": round(reconciler_cpu, 1),
            "reconciler_cpu_percent_of_one_core": round(100 * reconciler_cpu / converge, 1),
            "lab_cpu_seconds": round(lab_cpu, 1),
            "lab_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


def max_overlap(intervals: list[tuple[object, object]]) -> int:
    """The most outages open at the same instant."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals if end is not None],
                   key=lambda edge: (edge[0], edge[1]))
    current = peak = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--max-unavailable", type=int, default=10)
    parser.add_argument("--reboot-seconds", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--bundle-certificates", type=int, default=150)
    args = parser.parse_args()
    result = asyncio.run(run(args.nodes, args.max_unavailable, args.reboot_seconds, args.timeout,
                             args.bundle_certificates))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
