"""Reading a node the way an administrator would: over SSH, one PowerShell round trip for its
proxy variables, Root store, boot time and egress services, and ``crictl pull`` and ``curl.exe``
for real traffic (``trafficcommands``: the destination travels as data); a Linux node in one POSIX
shell round trip (``observe_linux``: ``linuxprobe``, its bundle sent only when it changed).

Connections are kept per node and reopened after a reboot; the host key is pinned on first contact
(and handed to ``on_pin``, so that a run's later probes hold the node to it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

import asyncssh

from proxyfleet.core.contract import EGRESS_SERVICES, PROXY_VARIABLES
from proxyfleet.core.nodessh import (
    BOOT_SCRIPT,
    HostKeyMismatch,
    NodeAddress,
    NodeConnection,
    NodeError,
    read_variables_script,
    services_script,
)
from proxyfleet.harness.conformance import linuxprobe
from proxyfleet.harness.conformance.trafficcommands import fetch_command, pull_command


@dataclass(frozen=True)
class NodeState:
    """One observation of a node."""

    environment: dict[str, str | None]
    root: frozenset[str]
    boot: dt.datetime
    services: dict[str, dt.datetime | None]  # egress service -> process start time (None: not running)
    files: frozenset[str] = frozenset()  # files under the places a reconciler keeps its own (FILE_PLACES)


@dataclass(frozen=True)
class PullResult:
    ok: bool
    output: str


def _time(text: object) -> dt.datetime | None:
    if not text:
        return None
    value = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


# Where a reconciler keeps files of its own on a Windows node: the Kubernetes directory (WMCO's
# bundle and import record live there) and the SSH user's profile (data files sent over SFTP).
FILE_PLACES = ("C:\\k", "$env:USERPROFILE\\.proxyfleet")


def probe_script() -> str:
    """One round trip: machine proxy variables, Root thumbprints, boot time, egress services, and
    the files under ``FILE_PLACES``."""
    places = ", ".join(f'"{p}"' for p in FILE_PLACES)
    return ("$ErrorActionPreference = 'Stop'\n"
            + read_variables_script("Machine") +
            "$root = @(Get-ChildItem -Path Cert:\\LocalMachine\\Root | Select-Object -ExpandProperty Thumbprint)\n"
            f"$boot = {BOOT_SCRIPT}\n"
            + services_script() +
            f"$files = @(foreach ($place in @({places})) {{ if (Test-Path -LiteralPath $place) {{ "
            "Get-ChildItem -LiteralPath $place -Recurse -File | ForEach-Object { $_.FullName } } })\n"
            "[ordered]@{ environment = $environment; root = $root; boot = $boot; services = $services; "
            "files = $files } | ConvertTo-Json -Compress -Depth 4\n")


# SSH round trips (handshakes among them) in flight at once, whatever the fleet's size: 1,000
# handshakes at once on one event loop timed every one of them out.
PROBE_CONCURRENCY = 64
T = TypeVar("T")


class NodeProbe:
    """SSH access to every node of a lab or cluster, for observation only; at most ``concurrency``
    round trips at once (callers may ask for every node at once)."""

    def __init__(self, client_key: asyncssh.SSHKey, port: int, username: str = "Administrator",
                 usernames: dict[str, str] | None = None, host_keys: dict[str, str] | None = None,
                 strict_host_keys: bool = False, on_pin: Callable[[str, str], None] | None = None,
                 concurrency: int = PROBE_CONCURRENCY, linux: Iterable[str] = (), unit_files: bool = False) -> None:
        """``usernames``: per-address SSH users (else ``username``); ``host_keys``: keys known
        beforehand (a known_hosts file, or pins an earlier probe of the run made); a node presenting
        another is refused (``HostKeyMismatch``); ``strict_host_keys``: refuse an address without
        one instead of pinning its key on first contact; ``on_pin(address, key)``: told each pin
        made on first contact; ``linux``: the addresses of Linux nodes (read with a POSIX shell, the
        rest with PowerShell); ``unit_files``: each look at a Linux node also reads its egress
        units' files and the environment files they name (``linuxprobe.boot_environments``: where
        no lab evidence tells what the next boot starts them with)."""
        self.client_key = client_key
        self.port = port
        self.username = username
        self.usernames = dict(usernames or {})
        self.strict_host_keys = strict_host_keys
        self.on_pin = on_pin
        self._connections: dict[str, NodeConnection] = {}
        self._host_keys: dict[str, str] = dict(host_keys or {})
        self._slots = asyncio.Semaphore(concurrency)
        self._in_flight = 0
        self.busiest = 0  # the most round trips that were ever in flight at once
        self._queued: dict[str, float] = {}
        # Linux nodes' extracted bundles: parsed once per content, sent again only when changed
        self._bundles = linuxprobe.BundleCache()
        self._bundle_digests: dict[str, str] = {}
        self.linux: set[str] = set(linux)
        self.unit_files = unit_files
        # The environment files each Linux node's units named at its last look: read in the same
        # round trip next time (a second one only when the units name another)
        self._environment_files: dict[str, list[str]] = {}

    def queued(self, address: str) -> float:
        """Seconds the round trips to ``address`` have waited, in all, for a slot behind other nodes'
        (the judge's own throughput: at 1,000 nodes a first look waits a minute for its turn)."""
        return self._queued.get(address, 0.0)

    @asynccontextmanager
    async def _slot(self, address: str) -> AsyncIterator[None]:
        asked = time.monotonic()
        async with self._slots:
            self._queued[address] = self._queued.get(address, 0.0) + time.monotonic() - asked
            self._in_flight += 1
            self.busiest = max(self.busiest, self._in_flight)
            try:
                yield
            finally:
                self._in_flight -= 1

    def _connection(self, address: str) -> NodeConnection:
        connection = self._connections.get(address)
        if connection is None:
            if self.strict_host_keys and address not in self._host_keys:
                raise HostKeyMismatch(f"{address} is not in the known hosts file: not contacted")
            connection = NodeConnection(NodeAddress(address, self.port, self.usernames.get(address, self.username)),
                                        self.client_key, self._host_keys.get(address), connect_timeout=5.0)
            self._connections[address] = connection
        return connection

    async def reach(self, address: str) -> None:
        """Open the node's SSH session if it is not open (``Unreachable`` when it cannot be: then
        nothing was run on it)."""
        await self._round_trip(address, lambda connection: connection.connect())

    async def _round_trip(self, address: str, call: Callable[[NodeConnection], Awaitable[T]]) -> T:
        """``call`` on the node's connection in its turn (``_slot``); a connection that failed is
        dropped (the next call opens a new one), and a first contact's host key is pinned."""
        connection = self._connection(address)
        try:
            async with self._slot(address):
                return await call(connection)
        except NodeError:
            self._connections.pop(address, None)
            raise
        finally:
            self._pin(address, connection)

    async def run_script(self, address: str, script: str | None = None) -> object:
        """One PowerShell round trip (the probe's own by default); its JSON output, parsed."""
        return await self._round_trip(address, lambda connection: connection.script(script or probe_script(),
                                                                                    limit=20))

    async def run_as_root(self, address: str, script: str) -> tuple[int | None, str]:
        """A POSIX shell script as root on a Linux node (on stdin of ``sudo -n sh``, never on a
        command line): its exit status (None: the session was cut first) and what it said."""
        result = await self._round_trip(address, lambda connection: connection.run("sudo -n sh", limit=30,
                                                                                   input=script))
        return result.exit_status, (str(result.stdout or "") + str(result.stderr or "")).strip()

    def _pin(self, address: str, connection: NodeConnection) -> None:
        """Pin the key a first contact was shown (once its handshake is done, whatever the command
        then did: a later connection must show the same)."""
        if connection.host_key and address not in self._host_keys:
            self._host_keys[address] = connection.host_key
            if self.on_pin is not None:
                self.on_pin(address, connection.host_key)

    async def observe(self, address: str) -> NodeState:
        """One round trip; raises ``NodeError`` when the node cannot be read (e.g. rebooting)."""
        data = await self.run_script(address)
        if not isinstance(data, dict):
            raise NodeError(f"{address} answered the probe with {data!r}")
        environment = {name: (data.get("environment") or {}).get(name) for name in PROXY_VARIABLES}
        root = data.get("root") or []
        boot = _time(data.get("boot"))
        assert boot is not None
        services = {name: _time((data.get("services") or {}).get(name)) for name in EGRESS_SERVICES}
        files = frozenset(str(f) for f in data.get("files") or [])
        return NodeState(environment, frozenset(str(t).upper() for t in root), boot, services, files)

    async def look(self, address: str) -> NodeState | linuxprobe.LinuxNodeState:
        """One look at the node, the way its kind is read (``observe`` or ``observe_linux``)."""
        return await (self.observe_linux(address) if address in self.linux else self.observe(address))

    async def observe_linux(self, address: str) -> linuxprobe.LinuxNodeState:
        """One look at a Linux node (``linuxprobe``); raises ``NodeError`` when it cannot be read."""
        known = self._environment_files.get(address, [])
        state = await self._round_trip(address, lambda connection: linuxprobe.observe(
            connection, self._bundles, self._bundle_digests.get(address, ""), self.unit_files, known))
        self._bundle_digests[address] = state.bundle_digest
        if self.unit_files:
            named = sorted(linuxprobe.environment_files_named(state))
            unread = [p for p in named if p not in state.environment_files]
            if unread:
                more = await self._round_trip(address, lambda connection: linuxprobe.read_environment_files(
                    connection, unread))
                state = dataclasses.replace(state, environment_files={**state.environment_files, **more})
            self._environment_files[address] = named
        return state

    async def pull(self, address: str, image: str) -> PullResult:
        """``crictl pull`` on the node: the runtime's own environment decides the route (on Linux
        as root: the runtime's socket is root's). Raises ``ProbeTargetError`` (before contacting
        the node) for a reference it cannot carry."""
        command = linuxprobe.pull_command(image) if address in self.linux else pull_command(image)
        return await self._traffic(address, command, 60)

    async def fetch(self, address: str, url: str) -> PullResult:
        """A plain request as the node's clients make it: on Windows ``curl.exe`` in a new SSH
        session, whose environment is the machine's (and the user's) as it is now — what the real
        operator's e2e checks with ``curl.exe -v``; on Linux ``curl`` with exactly the proxy
        variables the kubelet's process holds (``linuxprobe.fetch_command``). Raises
        ``ProbeTargetError`` (before contacting the node) for a URL it cannot carry."""
        command = linuxprobe.fetch_command(url) if address in self.linux else fetch_command(url)
        return await self._traffic(address, command, 30)

    async def _traffic(self, address: str, command: str, limit: float) -> PullResult:
        """``ok``: the program's own exit status was 0 (the command exits with it)."""
        try:
            connection = self._connection(address)
        except NodeError as exc:
            return PullResult(False, str(exc))
        try:
            async with self._slot(address):
                result = await connection.run(command, limit=limit)
        except NodeError as exc:
            self._connections.pop(address, None)
            return PullResult(False, str(exc))
        finally:
            self._pin(address, connection)
        text = (str(result.stdout or "") + str(result.stderr or "")).strip()
        return PullResult(result.exit_status == 0, text)

    async def forget(self, address: str) -> None:
        """Drop the connection to ``address`` and the host key pinned for it (the administrator
        knows the host was reinstalled)."""
        connection = self._connections.pop(address, None)
        if connection is not None:
            await connection.close()
        self._host_keys.pop(address, None)

    async def close(self) -> None:
        for connection in self._connections.values():
            await connection.close()
        self._connections.clear()
