"""Run the real ``mitmdump`` as the lab's corporate proxy.

Its MITM CA is a trustme CA with an RSA key, written as ``confdir/mitmproxy-ca.pem`` (key and
certificate in one PEM, as mitmproxy expects); upstream it trusts only the lab's public CA;
outgoing connections leave from the proxy's own egress address, so origins can tell the proxy
from a node. Started on a free port and waited for by probing; stopped with SIGTERM (then
SIGKILL) on the whole process group, also at interpreter exit. Started by fork from a process
that has already imported mitmproxy (``forkserver``: the same program and arguments, a fraction of
the CPU), or with ``PROXYFLEET_MITMDUMP_FORK=0`` in a fresh interpreter.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme

from proxyfleet.core import owneddirs
from proxyfleet.core.lifecycle import die_with_parent, exit_description, terminate_group
from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.noproxy.urls import with_userinfo
from proxyfleet.core.privatedirs import runtime_directory
from proxyfleet.core.secretfiles import write_private
from proxyfleet.core.startupclock import StartupClock
from proxyfleet.simulators.network import Endpoint, LabNetwork
from proxyfleet.simulators.proxy import forkserver

log = logging.getLogger(__name__)

ADDON = Path(__file__).with_name("addon.py")
_LIVE: set[int] = set()  # process groups to kill if the interpreter exits abruptly
_SOCKET_DIRS: set[Path] = set()  # short control-socket directories to remove at exit
SOCKET_PREFIX = "mitmdump-"


@atexit.register
def _kill_leftovers() -> None:
    for pgid in list(_LIVE):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    # A stop cut short (a second signal during a lab's teardown) leaves the short socket directory
    # in the temporary directory; the interpreter's exit still removes it, once no mitmdump is left
    # to create its socket there.
    for directory in list(_SOCKET_DIRS):
        owneddirs.remove(directory)


UNIX_SOCKET_PATH_LIMIT = 100


class ProxyError(RuntimeError):
    reason = "ProxyError"


def _short_socket_path() -> Path:
    """A control-socket path short enough for AF_UNIX (108 bytes), for a proxy whose state directory
    is deep: in this user's runtime directory, with its owner recorded, so that a directory left by a
    process killed outright (no stop, no exit handler) is swept by the next one made."""
    parent = runtime_directory() / "sockets"
    owneddirs.sweep(parent, SOCKET_PREFIX)
    directory = owneddirs.make(parent, SOCKET_PREFIX)
    _SOCKET_DIRS.add(directory)
    return directory / "control.sock"


PORT_ATTEMPTS = 5
# One start-up look (control socket, then port): not a verdict, a bound on a look that cannot
# answer; the StartupClock decides when to give up.
READY_LOOK_SECONDS = 5.0


class PortTaken(ProxyError):
    """mitmdump could not listen: its port was taken (by another process, after it was chosen)."""


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        port: int = probe.getsockname()[1]
        return port


def read_flow_log(path: Path) -> list[dict[str, Any]]:
    """The addon's JSON-lines flow log (a line still being written is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            records.append(json.loads(line))
    return records


@dataclass
class ProxySettings:
    """``network`` None: a proxy started for an existing cluster, which resolves upstream names
    through ``hosts_file`` (or, without one, the system) and leaves from ``egress_address`` (or
    wherever the system routes it, when None)."""

    state_dir: Path
    network: LabNetwork | None
    upstream_ca_pem: bytes
    listen_address: str = "127.20.0.1"
    egress_address: str | None = "127.20.0.2"
    hosts_file: Path | None = None
    port: int = 0
    auth: str | None = None  # "user:password", as the clients send it (not percent-encoded)
    mitm_ca: trustme.CA | None = None
    extra_options: dict[str, str] = field(default_factory=dict)
    # Who may connect (addresses or networks; empty: anyone): the run's proxy for an existing
    # cluster accepts only its instances.
    allowed_clients: tuple[str, ...] = ()
    # Without a table or hosts file: refuse destinations on this machine, loopback or link-local.
    guard_destinations: bool = False


class ProxyServer:
    """One mitmdump process serving the lab."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.mitm_ca = settings.mitm_ca or trustme.CA(
            organization_name="proxyfleet corporate proxy", key_type=trustme.KeyType.RSA)
        self.directory = settings.state_dir
        self.confdir = self.directory / "confdir"
        self.flow_log_path = self.directory / "flows.jsonl"
        self.stream_path = self.directory / "flows.mitm"
        self.table_path = self.directory / "lab-table.json"
        self.control_path = self.directory / "control.sock"
        self.auth_path = self.directory / "proxyauth"
        if len(str(self.control_path.resolve())) > UNIX_SOCKET_PATH_LIMIT:
            self.control_path = _short_socket_path()
        self.port = settings.port
        self.started_seconds: float | None = None
        self._process: asyncio.subprocess.Process | forkserver.ForkedProcess | None = None
        self._stderr_path = self.directory / "mitmdump.log"

    # --- addresses ------------------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.settings.listen_address, self.port)

    @property
    def endpoints(self) -> list[Endpoint]:
        """Every address it listens on (one: the lab's mitmdump has no TLS listener)."""
        return [self.endpoint]

    def url(self, host: str | None = None, with_credentials: bool = True) -> str:
        """The proxy URL nodes are given (``host`` is its virtual name in the lab table)."""
        url = f"http://{host or self.settings.listen_address}:{self.port}"
        return with_userinfo(url, self.settings.auth) if self.settings.auth and with_credentials else url

    @property
    def mitm_ca_pem(self) -> bytes:
        return self.mitm_ca.cert_pem.bytes()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def ca_key_path(self) -> Path:
        """Where mitmdump reads its CA (key and certificate), only while it starts."""
        return self.confdir / "mitmproxy-ca.pem"

    def _prepare(self) -> None:
        self.confdir.mkdir(parents=True, exist_ok=True)
        if self.control_path.parent == self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)
        elif not self.control_path.parent.exists():  # a restart: its last one went with its stop
            self.control_path = _short_socket_path()
        write_private(self.ca_key_path, self.mitm_ca.private_key_pem.bytes() + self.mitm_ca.cert_pem.bytes())
        (self.confdir / "mitmproxy-ca-cert.pem").write_bytes(self.mitm_ca.cert_pem.bytes())
        (self.directory / "upstream-trust.pem").write_bytes(self.settings.upstream_ca_pem)
        if self.settings.auth:
            write_private(self.auth_path, self.settings.auth)
        self.publish_table()

    def publish_table(self) -> None:
        """Write the lab table where the addon reads it (it reloads on change)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.settings.network is not None:
            self.settings.network.write(self.table_path)

    def _arguments(self) -> list[str]:
        where = ({"lab_table": str(self.table_path)} if self.settings.network is not None else
                 {"lab_hosts": str(self.settings.hosts_file)} if self.settings.hosts_file is not None else {})
        options = {
            "confdir": str(self.confdir),
            **({"connect_addr": self.settings.egress_address} if self.settings.egress_address else {}),
            "ssl_verify_upstream_trusted_ca": str(self.directory / "upstream-trust.pem"),
            "lab_stream_file": str(self.stream_path),
            "flow_log": str(self.flow_log_path),
            **where,
            "control_socket": str(self.control_path),
            "termlog_verbosity": "warn",
            "flow_detail": "0",
            "connection_strategy": "eager",
            **self.settings.extra_options,
        }
        if self.settings.auth:
            options["lab_auth_file"] = str(self.auth_path)  # the credentials stay off argv
        if self.settings.allowed_clients:
            options["lab_allowed_clients"] = ",".join(self.settings.allowed_clients)
        if self.settings.guard_destinations:
            options["lab_guard_destinations"] = "true"
        arguments = ["--listen-host", self.settings.listen_address, "--listen-port", str(self.port),
                     "-s", str(ADDON)]
        for key, value in options.items():
            arguments += ["--set", f"{key}={value}"]
        return arguments

    async def start(self, startup_limit: float = 60.0) -> None:
        if self.running:
            return
        if self.port:  # fixed by the lab: a port in use is an error to report
            await self._start(startup_limit)
            return
        # A free port is free when asked, not necessarily when mitmdump binds it: another process
        # may take it between (a soak beside a test suite saw "address already in use"). A port we
        # chose is chosen again; nothing else about the start is retried.
        for attempt in range(PORT_ATTEMPTS):
            self.port = _free_port(self.settings.listen_address)
            try:
                await self._start(startup_limit)
                return
            except ProxyError as exc:
                if not isinstance(exc, PortTaken) or attempt == PORT_ATTEMPTS - 1:
                    self.port = 0  # chosen, never fixed: the next start chooses again
                    raise
                log.warning("mitmdump's port %s:%s was taken before it could listen; choosing another",
                            self.settings.listen_address, self.port)

    async def _start(self, startup_limit: float) -> None:
        self._prepare()
        started = time.monotonic()
        # Both streams: mitmdump's terminal log (the error that stopped it) goes to stdout, its
        # "Error logged during startup, exiting..." to stderr.
        if forkserver.enabled():
            try:
                self._process = await forkserver.spawn(self._arguments(), self._stderr_path, startup_limit,
                                                       process_monitor().stalled)
            except forkserver.ForkServerError as exc:
                raise ProxyError(str(exc)) from None
        else:
            output = self._stderr_path.open("ab")  # handed to the child
            try:
                self._process = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", forkserver.FRESH,
                    *self._arguments(), stdin=asyncio.subprocess.DEVNULL,
                    stdout=output, stderr=output,
                    start_new_session=True, preexec_fn=die_with_parent)
            finally:
                output.close()
        _LIVE.add(self._process.pid)
        try:
            pid = self._process.pid
            await self._wait_ready(StartupClock(startup_limit, lambda: pid, process_monitor().stalled))
        except BaseException:
            await self.stop()
            raise
        finally:
            # mitmdump read its CA key at start-up and keeps it in memory; on disk it would outlive a
            # killed run (a CA a cluster may still trust). Each start writes it again.
            self.ca_key_path.unlink(missing_ok=True)
        self.started_seconds = time.monotonic() - started

    async def _wait_ready(self, clock: StartupClock) -> None:
        """Probe the control socket, then the listening port, until both answer (as long as mitmdump
        keeps working at it: ``StartupClock``).

        The control socket comes first: the addon opens it in mitmproxy's ``running`` hook, after
        mitmproxy bound its port, and a failed bind exits before it. Until then the port may belong
        to another process, and a connect to a listener that never accepts hangs in SYN retries for
        two minutes, blind to mitmdump's exit (a loaded CI machine saw it). Each look is bounded for
        the same reason."""
        while True:
            if self._process is None:  # a lab bug, not mitmdump's: say so, not "exited"
                raise ProxyError("mitmdump was stopped by the lab while it was starting")
            if self._process.returncode is not None:
                said = self._said()
                taken = f"{self.settings.listen_address}:{self.port}" in said and "address already in use" in said
                raise (PortTaken if taken else ProxyError)(
                    f"mitmdump exited during start-up ({exit_description(self._process.returncode)}):\n{said}")
            try:
                async with asyncio.timeout(READY_LOOK_SECONDS):
                    await self._control({"op": "get"})
                    _, writer = await asyncio.open_connection(self.settings.listen_address, self.port)
                    # Closed before returning, so this end closes first: a stop right after would
                    # otherwise close it from mitmdump's end and leave its port in TIME_WAIT.
                    writer.close()
                    await writer.wait_closed()
                return
            except (OSError, ProxyError):  # TimeoutError is an OSError
                if clock.expired():
                    raise ProxyError(f"mitmdump did not start listening ({clock.why()}); "
                                     f"its output ended:\n{self._said()}") from None
                await asyncio.sleep(0.05)

    def _said(self) -> str:
        """The end of mitmdump's output (both streams), for an error."""
        return self._stderr_path.read_text(errors="replace")[-2000:] or "(no output)\n"

    async def stop(self, grace: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        await terminate_group(process, grace)
        _LIVE.discard(process.pid)
        with contextlib.suppress(FileNotFoundError):
            self.control_path.unlink()
        if self.control_path.parent != self.directory:
            owneddirs.remove(self.control_path.parent)  # the short socket directory; a new one on start
            _SOCKET_DIRS.discard(self.control_path.parent)

    async def __aenter__(self) -> ProxyServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- faults -------------------------------------------------------------------------------

    async def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        reader, writer = await asyncio.open_unix_connection(str(self.control_path))
        try:
            writer.write((json.dumps(request) + "\n").encode())
            await writer.drain()
            line = await reader.readline()
        finally:
            writer.close()
        if not line:
            raise ProxyError("the proxy's control socket closed without answering")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def set_faults(self, *, refuse: bool | None = None, bad_gateway: list[str] | None = None,
                         delay: float | None = None) -> dict[str, Any]:
        """Switch fault modes; returns the proxy's state once it has applied them."""
        request: dict[str, Any] = {"op": "set"}
        if refuse is not None:
            request["refuse"] = refuse
        if bad_gateway is not None:
            request["bad_gateway"] = bad_gateway
        if delay is not None:
            request["delay"] = delay
        return (await self._control(request))["state"]  # type: ignore[no-any-return]

    async def lag(self, since: float) -> dict[str, float]:
        """How late its event loop has been since ``since`` (``time.monotonic()``): the worst single
        stall and their sum, in seconds (empty while it is down)."""
        if not self.running:
            return {}
        answer = await self._control({"op": "lag", "since": since})
        return {k: float(v) for k, v in (answer.get("lag") or {}).items()}

    async def go_down(self) -> None:
        """The "proxy down" fault: nothing listens on the proxy's port any more."""
        await self.stop()

    async def come_back(self) -> None:
        await self.start()

    # --- what happened --------------------------------------------------------------------------

    def flows(self) -> list[dict[str, Any]]:
        return read_flow_log(self.flow_log_path)
