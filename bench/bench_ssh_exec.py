"""What one SSH exec request on a kept connection costs, and how much of it is the `MSG_IGNORE`
asyncssh sends before every connection-layer packet once encryption is on.

    python bench/bench_ssh_exec.py --execs 3000 --rounds 5

One simulated Windows node and the lab's own client (`core/nodessh.NodeConnection`, AES-GCM) in one
process, so the CPU time is both sides together, as a lab pays it. Each round runs ``hostname``
(cmd.exe, the default shell) ``--execs`` times on one connection, once as shipped and once with
asyncssh's per-packet `MSG_IGNORE` left out, alternating, so that a machine's noise falls on both
alike; the best round of each is reported with the packets each side sent per exec, by type.

Leaving the ignore packets out is a measurement only, never what proxyfleet runs: RFC 4253 §11.2
lets an implementation send them (it need not), Windows' OpenSSH and Go's x/crypto/ssh (the real
operator's client) do not, and asyncssh has no option to turn them off.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncssh
from asyncssh.connection import SSHConnection
from asyncssh.constants import MSG_IGNORE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.core.nodessh import NodeAddress, NodeConnection
from proxyfleet.simulators.fleet import Fleet, FleetSettings

SENT: collections.Counter[str] = collections.Counter()
_stock_send_packet = SSHConnection.send_packet


def _counting(drop_ignore: bool) -> Callable[..., None]:
    def send_packet(self: SSHConnection, pkttype: int, *args: bytes, **kwargs: Any) -> None:
        if drop_ignore and pkttype == MSG_IGNORE:
            return
        side = "server" if self.is_server() else "client"
        SENT[f"{side} {pkttype}"] += 1
        _stock_send_packet(self, pkttype, *args, **kwargs)
    return send_packet


@contextmanager
def packets(drop_ignore: bool) -> Iterator[None]:
    """Count every packet either side sends (and, with ``drop_ignore``, leave out MSG_IGNORE)."""
    SSHConnection.send_packet = _counting(drop_ignore)  # type: ignore[method-assign]
    try:
        yield
    finally:
        SSHConnection.send_packet = _stock_send_packet  # type: ignore[method-assign]


async def one_round(node: NodeAddress, key: asyncssh.SSHKey, host_key: str, execs: int,
                    drop_ignore: bool) -> dict[str, Any]:
    async with NodeConnection(node, key, host_key) as connection:
        await connection.run("hostname")  # the connection and its first session are not counted
        SENT.clear()
        with packets(drop_ignore):
            started = time.process_time()
            for _ in range(execs):
                answer = await connection.run("hostname")
                if answer.exit_status != 0:
                    raise SystemExit(f"hostname failed: {answer.stderr!r}")
            cpu = time.process_time() - started
    names = {2: "MSG_IGNORE", 90: "CHANNEL_OPEN", 91: "OPEN_CONFIRMATION", 93: "WINDOW_ADJUST",
             94: "DATA", 96: "EOF", 97: "CLOSE", 98: "REQUEST", 99: "SUCCESS"}
    per_exec = {f"{key.split()[0]} {names.get(int(key.split()[1]), key.split()[1])}": round(count / execs, 2)
                for key, count in sorted(SENT.items())}
    return {"ms_cpu_per_exec": round(cpu / execs * 1000, 3),
            "packets_per_exec": round(sum(SENT.values()) / execs, 2), "by_type": per_exec}


async def run(execs: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        fleet = Fleet(FleetSettings(nodes=1, state_dir=Path(directory)))
        await fleet.start()
        try:
            node = fleet.nodes[0]
            target = NodeAddress(node.address, node.port, node.username)
            results: dict[str, list[dict[str, Any]]] = {"as shipped": [], "without MSG_IGNORE": []}
            for _ in range(rounds):
                for label, drop in (("as shipped", False), ("without MSG_IGNORE", True)):
                    results[label].append(await one_round(target, fleet.client_key, node.host_key_openssh,
                                                          execs, drop))
        finally:
            await fleet.stop()
    best = {label: min(rows, key=lambda row: row["ms_cpu_per_exec"]) for label, rows in results.items()}
    shipped, without = best["as shipped"]["ms_cpu_per_exec"], best["without MSG_IGNORE"]["ms_cpu_per_exec"]
    return {"asyncssh": asyncssh.__version__, "execs_per_round": execs, "rounds": rounds,
            "ms_cpu_per_exec_every_round": {label: [row["ms_cpu_per_exec"] for row in rows]
                                            for label, rows in results.items()},
            "best": best, "saved_share": round(1 - without / shipped, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--execs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.execs, args.rounds)), indent=2))


if __name__ == "__main__":
    main()
