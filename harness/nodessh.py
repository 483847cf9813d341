"""Talking to one Windows node over SSH and SFTP: connect with host-key pinning, run one
PowerShell script per round trip, copy files, read the boot time, request a restart.

The same code drives a real Windows Server with OpenSSH: it only sends PowerShell text and SFTP
requests with Windows paths. The reconciler and the conformance probes both use it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from dataclasses import dataclass
from typing import Any

import asyncssh

from harness.contract import EGRESS_SERVICES, PROXY_VARIABLES

BOOT_SCRIPT = "(Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime.ToUniversalTime().ToString('o')"
REBOOT_COMMAND = "Restart-Computer -Force"


def read_variables_script(scope: str) -> str:
    """PowerShell setting ``$environment``: each proxy variable at ``scope`` (Machine or Process),
    $null when unset."""
    names = ",".join(f"'{n}'" for n in PROXY_VARIABLES)
    return ("$environment = [ordered]@{}\n"
            f"foreach ($name in @({names})) {{ $environment[$name] = "
            f"[Environment]::GetEnvironmentVariable($name, '{scope}') }}\n")


def services_script() -> str:
    """PowerShell setting ``$services``: each egress service's process start time (UTC, ISO 8601),
    $null when it is not running."""
    names = ",".join(f"'{n}'" for n in EGRESS_SERVICES)
    return (f"$services = [ordered]@{{}}\n"
            f"foreach ($name in @({names})) {{\n"
            "  $process = Get-Process -Name $name -ErrorAction SilentlyContinue\n"
            "  if ($process) { $services[$name] = $process.StartTime.ToUniversalTime().ToString('o') }\n"
            "  else { $services[$name] = $null }\n"
            "}\n")


def encoded_command(script: str) -> str:
    """An exec command line that runs ``script`` in a fresh Windows PowerShell, whatever the
    host's OpenSSH default shell is."""
    encoded = base64.b64encode(script.encode("utf-16-le")).decode("ascii")
    return f"powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand {encoded}"


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
