"""The reconciler's node-side rhythm on top of ``proxyfleet.core.nodessh``: wait for a *new* boot after a
restart, and keep one connection per node between reconciles."""

from __future__ import annotations

import asyncio
import time

import asyncssh

from proxyfleet.core.nodessh import HostKeyMismatch, NodeAddress, NodeConnection, NodeError, RebootTimeout


async def wait_for_new_boot(target: NodeAddress, client_key: asyncssh.SSHKey, pinned_host_key: str | None,
                            old_boot: str, limit: float, poll: float = 0.2,
                            kind: type[NodeConnection] = NodeConnection) -> tuple[NodeConnection, str, int]:
    """Wait until the node answers SSH again with a boot time other than ``old_boot``.

    Returns (the open connection that saw it, new boot time, connection attempts). Checking
    reachability right after the restart request would see the old boot still running — the
    classic false positive — so only a new boot time counts as "back".
    """
    deadline = time.monotonic() + limit
    attempts = 0
    while time.monotonic() < deadline:
        attempts += 1
        connection = kind(target, client_key, pinned_host_key, connect_timeout=5)
        try:
            await connection.connect()
            boot = await connection.boot_time()
            if boot and boot != old_boot:
                return connection, boot, attempts
        except HostKeyMismatch:
            await connection.close()
            raise
        except NodeError:
            pass  # down, as expected while it restarts
        await connection.close()
        await asyncio.sleep(poll)  # polling the node's state, not synchronising with it
    raise RebootTimeout(f"{target.address} did not come back with a new boot within {limit:.0f}s")


class ConnectionPool:
    """One open SSH connection per node, kept between reconciles (a resync costs one round trip,
    not a handshake); dropped on any error and when the node reboots."""

    def __init__(self) -> None:
        self._open: dict[str, NodeConnection] = {}

    def __len__(self) -> int:
        return len(self._open)

    async def acquire(self, target: NodeAddress, client_key: asyncssh.SSHKey, pinned_host_key: str | None,
                      connect_timeout: float, kind: type[NodeConnection] = NodeConnection) -> NodeConnection:
        """The node's open connection if it still matches, else a new one (connected) of ``kind``."""
        existing = self._open.pop(target.address, None)
        if existing is not None:
            same_key = existing.client_key.public_data == client_key.public_data
            if (existing.is_open and type(existing) is kind and existing.target == target and same_key
                    and existing.host_key == (pinned_host_key or existing.host_key)):
                existing.round_trips, existing.reused = 0, True
                return existing
            await existing.close()
        connection = kind(target, client_key, pinned_host_key, connect_timeout)
        await connection.connect()
        return connection

    def release(self, connection: NodeConnection) -> None:
        """Keep an open connection for the next reconcile of its node."""
        if connection.is_open:
            self._open[connection.target.address] = connection

    async def discard(self, address: str) -> None:
        connection = self._open.pop(address, None)
        if connection is not None:
            await connection.close()

    async def close_all(self) -> None:
        connections, self._open = list(self._open.values()), {}
        await asyncio.gather(*(c.close() for c in connections))
