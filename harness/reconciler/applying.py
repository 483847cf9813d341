"""Talking to one Windows node over SSH and SFTP: connect with host-key pinning, run one script
per step, copy files, reboot and wait for a *new* boot.

The same code drives a real Windows Server with OpenSSH: it only sends PowerShell text and SFTP
requests with Windows paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from typing import Any

import asyncssh

from harness.reconciler.scripts import BOOT_SCRIPT, REBOOT_COMMAND, encoded_command


class NodeError(Exception):
    """A node-side failure; ``reason`` is the Event reason that reports it."""

    reason = "NodeError"


class Unreachable(NodeError):
    reason = "NodeUnreachable"


class HostKeyMismatch(NodeError):
    reason = "HostKeyMismatch"


class ScriptFailed(NodeError):
    reason = "ScriptFailed"


class RebootTimeout(NodeError):
    reason = "RebootTimeout"


@dataclass(frozen=True)
class NodeAddress:
    address: str
    port: int
    username: str


class NodeConnection:
    """One SSH connection to a node, reused for every step until closed."""

    def __init__(self, target: NodeAddress, client_key: asyncssh.SSHKey, pinned_host_key: str | None,
                 connect_timeout: float = 10.0) -> None:
        self.target = target
        self.client_key = client_key
        self.pinned_host_key = pinned_host_key
        self.connect_timeout = connect_timeout
        self.host_key: str | None = None
        self._connection: asyncssh.SSHClientConnection | None = None
        self.round_trips = 0
        self.reused = False  # kept open from an earlier reconcile

    @property
    def is_open(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    async def connect(self) -> None:
        known: Any = None
        if self.pinned_host_key:
            known = asyncssh.import_known_hosts(
                f"[{self.target.address}]:{self.target.port} {self.pinned_host_key}\n")
        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
            async with asyncio.timeout(self.connect_timeout):
                self._connection = await asyncssh.connect(
                    self.target.address, self.target.port, username=self.target.username,
                    client_keys=[self.client_key], known_hosts=known, agent_path=None, config=[],
                    preferred_auth="publickey", keepalive_interval=0)
        except asyncssh.HostKeyNotVerifiable:
            raise HostKeyMismatch(
                f"the SSH host key of {self.target.address} is not the one pinned on first contact; "
                "the instance was replaced or someone is in the middle") from None
        except asyncssh.PermissionDenied:
            raise Unreachable(f"{self.target.address} refused the SSH key for user "
                              f"{self.target.username}") from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise Unreachable(f"cannot reach {self.target.address}:{self.target.port} over SSH: "
                              f"{exc or type(exc).__name__}") from None
        server_key = self._connection.get_server_host_key()
        self.host_key = server_key.export_public_key("openssh").decode().strip() if server_key else None

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            with contextlib.suppress(Exception):
                await self._connection.wait_closed()
            self._connection = None

    async def __aenter__(self) -> NodeConnection:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, command: str, limit: float = 60.0) -> asyncssh.SSHCompletedProcess:
        if self._connection is None:
            await self.connect()
        assert self._connection is not None
        self.round_trips += 1
        try:
            async with asyncio.timeout(limit):
                return await self._connection.run(command, check=False)
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            await self.close()
            raise Unreachable(f"lost the SSH session to {self.target.address}: "
                              f"{exc or type(exc).__name__}") from None

    async def script(self, script: str, limit: float = 60.0) -> Any:
        """Run a PowerShell script (one round trip) and parse the JSON it prints."""
        result = await self.run(encoded_command(script), limit)
        stdout = str(result.stdout or "")
        if result.exit_status != 0:
            raise ScriptFailed(f"PowerShell on {self.target.address} exited {result.exit_status}: "
                               f"{str(result.stderr or '').strip()[:2000]}")
        try:
            return json.loads(stdout.strip() or "null")
        except ValueError:
            raise ScriptFailed(f"PowerShell on {self.target.address} printed no JSON: {stdout[:500]}") from None

    async def put_files(self, files: dict[str, bytes]) -> None:
        """Copy files over SFTP (one session, pipelined requests)."""
        if not files:
            return
        if self._connection is None:
            await self.connect()
        assert self._connection is not None
        try:
            async with self._connection.start_sftp_client() as sftp:
                directories = sorted({path.rsplit("\\", 1)[0] for path in files})
                for directory in directories:
                    with contextlib.suppress(asyncssh.SFTPFailure, asyncssh.SFTPFileAlreadyExists):
                        await sftp.makedirs(directory, exist_ok=True)
                for path, data in files.items():
                    async with sftp.open(path, "wb") as remote:
                        await remote.write(data)
        except (OSError, asyncssh.Error) as exc:
            raise Unreachable(f"copying files to {self.target.address} failed: {exc}") from None

    async def boot_time(self) -> str:
        result = await self.run(BOOT_SCRIPT, limit=30)
        if result.exit_status != 0:
            raise ScriptFailed(f"reading the boot time failed: {str(result.stderr or '').strip()}")
        return str(result.stdout or "").strip()

    async def request_reboot(self) -> None:
        """``Restart-Computer -Force``; the session may be cut before an exit status arrives."""
        with contextlib.suppress(Unreachable):
            result = await self.run(REBOOT_COMMAND, limit=30)
            if result.exit_status not in (0, None):
                raise ScriptFailed(f"Restart-Computer failed: {str(result.stderr or '').strip()}")
        await self.close()


async def wait_for_new_boot(target: NodeAddress, client_key: asyncssh.SSHKey, pinned_host_key: str | None,
                            old_boot: str, limit: float, poll: float = 0.2) -> tuple[NodeConnection, str, int]:
    """Wait until the node answers SSH again with a boot time other than ``old_boot``.

    Returns (the open connection that saw it, new boot time, connection attempts). Checking
    reachability right after the restart request would see the old boot still running — the
    classic false positive — so only a new boot time counts as "back".
    """
    deadline = time.monotonic() + limit
    attempts = 0
    while time.monotonic() < deadline:
        attempts += 1
        connection = NodeConnection(target, client_key, pinned_host_key, connect_timeout=5)
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
                      connect_timeout: float) -> NodeConnection:
        """The node's open connection if it still matches, else a new one (connected)."""
        existing = self._open.pop(target.address, None)
        if existing is not None:
            same_key = existing.client_key.public_data == client_key.public_data
            if (existing.is_open and existing.target == target and same_key
                    and existing.host_key == (pinned_host_key or existing.host_key)):
                existing.round_trips, existing.reused = 0, True
                return existing
            await existing.close()
        connection = NodeConnection(target, client_key, pinned_host_key, connect_timeout)
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
