"""Talking to one Windows node over SSH and SFTP: connect with host-key pinning, run one
PowerShell script per round trip, copy files, read the boot time, request a restart.

The same code drives a real Windows Server with OpenSSH, whatever its default shell: every
command is ``powershell.exe … -EncodedCommand <script>``, which ``cmd.exe /c`` (Windows' default)
and ``powershell.exe -c`` (a configured DefaultShell) both run as is — the real operator instead
detects the shell with ``Get-Help`` and prefixes ``powershell.exe`` when needed. A command line
stays under cmd.exe's 8,191 characters, so scripts are constant code: the data they act on
(proxy values, certificates, import records) travels as a file over SFTP into the SSH user's own
profile directory (readable only by that user, SYSTEM and Administrators), which the script
reads and deletes. No value ever appears on a command line, where every local user, Windows'
process-creation events and script-block logging could read it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any

import asyncssh

from proxyfleet.core.contract import EGRESS_SERVICES, PROXY_VARIABLES

BOOT_SCRIPT = "(Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime.ToUniversalTime().ToString('o')"
REBOOT_SCRIPT = "Restart-Computer -Force"
# cmd.exe's own limit on a command line, less what sshd puts before the command.
MAX_COMMAND = 8191 - len("cmd.exe /c ")
# Where data files land: relative to the SSH user's home, the SFTP server's starting directory.
DATA_DIRECTORY = ".proxyfleet"


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
    host's OpenSSH default shell is. Raises ValueError beyond cmd.exe's line length."""
    encoded = base64.b64encode(script.encode("utf-16-le")).decode("ascii")
    command = f"powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand {encoded}"
    if len(command) > MAX_COMMAND:
        raise ValueError(f"a {len(script)}-character script does not fit a Windows command line "
                         f"({len(command)} > {MAX_COMMAND}); ship its data as a file")
    return command


def data_prologue(name: str) -> str:
    """PowerShell that loads ``$data`` from the data file ``name`` and deletes the file."""
    return ("$ErrorActionPreference = 'Stop'\n"
            f"$dataPath = [IO.Path]::Combine($env:USERPROFILE, '{DATA_DIRECTORY}', '{name}')\n"
            "try { $data = [IO.File]::ReadAllText($dataPath) | ConvertFrom-Json }\n"
            "finally { Remove-Item -LiteralPath $dataPath -Force -ErrorAction SilentlyContinue }\n")


def error_summary(stderr: str) -> str:
    """PowerShell's error view without the lines that echo the script (``At line:``, the
    ``+ …`` source and squiggle): messages and error ids only, never script text."""
    kept = []
    for line in stderr.splitlines():
        stripped = line.strip()
        if stripped.startswith(("At line:", "At C:\\", "+ ~", "+ ")) and "FullyQualifiedErrorId" not in line:
            continue
        if stripped.startswith("+ FullyQualifiedErrorId"):
            stripped = stripped[2:]
        if stripped:
            kept.append(stripped)
    return " ".join(kept)[:1000]


def silence_command_logging() -> None:
    """asyncssh logs every exec request's command line at INFO; a process that runs commands on
    nodes (or serves them) turns that off itself, explicitly, when it starts."""
    logging.getLogger("asyncssh").setLevel(logging.WARNING)


# AES-GCM first: OpenSSL runs it in hardware, where asyncssh's chacha20-poly1305 costs a Python-level
# MAC per packet (measurable when one process talks to hundreds of nodes). Windows' OpenSSH offers
# both; the rest keep the client working against a server that offers neither.
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
           "aes128-ctr", "aes256-ctr")


def _reason(exc: BaseException, limit: float | None) -> str:
    """Why an SSH exchange failed, never blank: a timeout says how long was waited (its own text is
    empty), an error without text says its kind."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"no answer within {limit:g} s" if limit is not None else "timed out"
    return str(exc) or type(exc).__name__


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
                    preferred_auth="publickey", keepalive_interval=0, encryption_algs=CIPHERS)
        except asyncssh.HostKeyNotVerifiable:
            raise HostKeyMismatch(
                f"the SSH host key of {self.target.address} is not the one pinned on first contact; "
                "the instance was replaced or someone is in the middle") from None
        except asyncssh.PermissionDenied:
            raise Unreachable(f"{self.target.address} refused the SSH key for user "
                              f"{self.target.username}") from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise Unreachable(f"cannot reach {self.target.address}:{self.target.port} over SSH: "
                              f"{_reason(exc, self.connect_timeout)}") from None
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

    async def run(self, command: str, limit: float = 60.0, input: str | None = None) -> asyncssh.SSHCompletedProcess:
        """One exec request; ``input`` (its whole stdin) is how data that must not be on a command
        line reaches the node."""
        if self._connection is None:
            await self.connect()
        assert self._connection is not None
        self.round_trips += 1
        try:
            async with asyncio.timeout(limit):
                return await self._connection.run(command, input=input, check=False)
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            await self.close()
            raise Unreachable(f"lost the SSH session to {self.target.address}: {_reason(exc, limit)}") from None

    async def script(self, script: str, limit: float = 60.0, data: Any = None) -> Any:
        """Run a PowerShell script (one round trip) and parse the JSON it prints. With ``data``,
        the script starts with ``$data`` holding it, copied over SFTP first (the same connection)."""
        if data is not None:
            name = f"{secrets.token_hex(8)}.json"
            await self.put_files({f"{DATA_DIRECTORY}\\{name}": json.dumps(data).encode()})
            script = data_prologue(name) + script
        result = await self.run(encoded_command(script), limit)
        stdout = str(result.stdout or "")
        if result.exit_status != 0:
            raise ScriptFailed(f"PowerShell on {self.target.address} exited {result.exit_status}: "
                               f"{error_summary(str(result.stderr or ''))}")
        try:
            return json.loads(stdout.strip() or "null")
        except ValueError:
            raise ScriptFailed(f"PowerShell on {self.target.address} printed no JSON "
                               f"({len(stdout)} characters of output)") from None

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
        result = await self.run(encoded_command(BOOT_SCRIPT), limit=30)
        if result.exit_status != 0:
            raise ScriptFailed(f"reading the boot time failed: {error_summary(str(result.stderr or ''))}")
        return str(result.stdout or "").strip()

    async def request_reboot(self) -> bool:
        """``Restart-Computer -Force``; returns whether an exit status came back. The session may
        be cut, or closed without an exit status, before anything comes back (OCPBUGS-90077):
        both mean "restarting", never "failed" — only a new boot time tells whether it happened."""
        confirmed = False
        with contextlib.suppress(Unreachable):
            result = await self.run(encoded_command(REBOOT_SCRIPT), limit=30)
            if result.exit_status not in (0, None):
                raise ScriptFailed(f"Restart-Computer failed: {error_summary(str(result.stderr or ''))}")
            confirmed = result.exit_status == 0
        await self.close()
        return confirmed
