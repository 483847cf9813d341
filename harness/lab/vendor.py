"""A vendor's own proxy as the lab's corporate proxy: a process the lab starts from a command
line (``--proxy-command``), or one already running (``--proxy-url``).

The lab gives it a private configuration directory (``{config_dir}``: the vendor's files copied
in, placeholders filled in), a hosts file mapping the lab's virtual names to the origins' loopback
addresses (``{hosts_file}``), the address and port to listen on (``{listen_host}``,
``{listen_port}``), the address to leave from (``{egress_address}``; the origins' egress
firewall accepts only that one) and the lab's public root CA (``{public_ca_file}``: what the
origins' certificates chain to, the lab's "internet", for a proxy that verifies them when it
intercepts), and a name of its own (``{instance}``: letters and digits, different for every proxy
the lab starts) for what a proxy names machine-wide after itself — Squid names its shared memory
segments after its service name, and two Squids with the same name starting at once can make one
of them exit (``squid -n {instance}``). It is judged without instrumentation, by what the lab owns (the
nodes' own records of their requests, the origins' logs, the firewall's refusals); its own access
log, in any format ``accesslogs`` reads, only adds to a failure's text.

With ``tls_port`` the proxy also listens with TLS on that port of the same address (an
``https://`` proxy URL): the lab issues it a server certificate for its names
(``{tls_cert_file}``, ``{tls_key_file}``, ``{tls_port}``) from a CA the nodes are given in the
trusted bundle.

Every start gets a fresh ``{config_dir}`` (``configdirs``): the proxy, or its container, owns it
once started, so the lab reads from it only by copying logs without following anything
(``proxylogs``), and never writes into it again. Its access log is read the same way; what an
earlier start logged is kept when a restart replaces the directory.

Not modelled here: a proxy that resolves names only through DNS (give it the hosts file, or run
it where ``/etc/hosts`` is its own); a proxy that needs more than two listening ports.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import pwd
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from proxyfleet.core.lifecycle import die_with_parent, terminate_group
from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.noproxy import redact_text
from proxyfleet.core.noproxy.urls import with_userinfo
from proxyfleet.core.privatedirs import NotPrivateError
from proxyfleet.core.safefiles import Skipped, UnsafeFileError, chown_tree, read_named, regular_files
from proxyfleet.core.secretfiles import open_private_append, write_private
from proxyfleet.core.startupclock import StartupClock
from proxyfleet.harness.lab import configdirs, proxylogs
from proxyfleet.harness.lab.accesslogs import AUTO, read_lines
from proxyfleet.harness.lab.external import ExternalReconcilerError, command_line
from proxyfleet.harness.lab.vendorcontainer import ContainerError, ProxyContainer
from proxyfleet.simulators.network import Endpoint

log = logging.getLogger(__name__)

STOP_GRACE = 10.0
# Seconds a proxy the lab started may take to listen once it runs, longer while it keeps working
# (core/startupclock); a running proxy (--proxy-url) answers within it, plus the lab's own stall.
STARTUP_LIMIT = 30.0
# One start-up look at a listener: a bound on a look that cannot answer, not a verdict (the
# StartupClock decides when to give up).
READY_LOOK_SECONDS = 5.0
# Where a loopback connection from a socket bound to no address leaves from on Linux (the route
# "local 127.0.0.0/8 dev lo src 127.0.0.1"): a proxy that cannot choose its outgoing address.
UNBOUND_EGRESS = "127.0.0.1"
DEFAULT_ACCESS_LOG = "{config_dir}/access.log"
CONFIG_FILE_LIMIT = 64 * 1024 * 1024  # bytes of one --proxy-config file
# /proc/net/tcp socket states that still belong to a live client connection (its access-log line,
# written when the connection ends, may not be there yet).
_OPEN_STATES = {"01", "08"}  # ESTABLISHED, CLOSE_WAIT


class VendorProxyError(RuntimeError):
    """The vendor proxy cannot be started, reached or read as asked."""

    reason = "VendorProxyError"


@dataclass
class VendorProxySettings:
    """How to run (or reach) the vendor's proxy."""

    state_dir: Path  # the lab's directory for this proxy: its output and, at the end, its logs
    listen: Endpoint
    egress_address: str
    hosts_text: str  # the lab's hosts file
    command: str | None = None  # a command-line template; None: ``url`` names a running proxy
    url: str | None = None
    config_files: list[Path] = field(default_factory=list)  # files or directories for {config_dir}
    ca_pem: bytes | None = None  # the vendor's interception CA (None: it tunnels)
    auth: str | None = None  # "user:password" the nodes send
    user: str | None = None  # run as this user (as root); it owns {config_dir}
    access_log: str | None = None  # where it writes its access log (placeholders allowed)
    log_format: str = AUTO  # how that log is read (``accesslogs``: a format's name or a regex)
    public_ca_pem: bytes = b""  # the lab's public root CA, for {public_ca_file}
    image: str | None = None  # run ``command`` (or the image's own) in a container of this image
    # Run the process in a mount namespace of its own whose /etc/hosts is the lab's hosts file: for
    # a proxy that resolves names only through /etc/hosts (needs root).
    own_etc_hosts: bool = False
    # TLS to the proxy itself: the port of its TLS listener (same address), and the server
    # certificate (chain) and key the lab issued it (None for a running proxy with its own).
    tls_port: int | None = None
    tls_cert_pem: bytes | None = None
    tls_key_pem: bytes | None = None
    # Where {config_dir}s are made (None: the runtime directory's, /run/proxyfleet/proxies as root).
    config_parent: Path | None = None
    # Whether ``state_dir`` outlives the run: the logs of a start that failed are then kept there,
    # else in a new directory of their own (a run that deletes its scratch must not take them along).
    state_kept: bool = False


@dataclass(frozen=True)
class VendorProxySpec:
    """What the user asked for (``--proxy-command`` or ``--proxy-url`` and their options); the lab
    turns it into ``VendorProxySettings`` once it knows its addresses."""

    command: str | None = None
    url: str | None = None
    listen: Endpoint | None = None  # None: the lab's proxy address, port 3128
    config_files: tuple[Path, ...] = ()
    ca_pem: bytes | None = None
    auth: str | None = None
    user: str | None = None
    access_log: str | None = None
    log_format: str = AUTO  # ``accesslogs.check_format``: a format's name or a regex
    image: str | None = None
    own_etc_hosts: bool = False
    # It cannot choose the address it connects from: its connections leave from UNBOUND_EGRESS,
    # which the lab's internet origins then accept (and ``{egress_address}`` names).
    unbound_egress: bool = False
    tls_port: int | None = None  # also an https:// proxy on this port of the same address
    tls_ca_pem: bytes | None = None  # a running proxy's TLS certificate's CA (started ones get the lab's)

    def __post_init__(self) -> None:
        if self.url is not None and (self.command is not None or self.image is not None):
            raise VendorProxyError("a running proxy (--proxy-url) is not started: leave out --proxy-command "
                                   "and --proxy-image")
        if self.url is None and self.command is None and self.image is None:
            raise VendorProxyError("give the proxy as a command, an image or the URL of a running one")
        if self.own_etc_hosts and (self.command is None or self.image is not None):
            raise VendorProxyError("--proxy-etc-hosts is for a proxy process (--proxy-command without "
                                   "--proxy-image; a container gets the names as extra hosts)")
        if self.tls_port is not None and not 0 < self.tls_port < 65536:
            raise VendorProxyError(f"--proxy-tls-port {self.tls_port} is not a port")
        if self.url is not None and self.tls_port is not None and self.tls_ca_pem is None:
            raise VendorProxyError("a running proxy's TLS listener (--proxy-tls-port) needs the CA of its "
                                   "certificate (--proxy-tls-ca): the lab cannot issue it one")
        if self.tls_ca_pem is not None and self.tls_port is None:
            raise VendorProxyError("--proxy-tls-ca is for a proxy with a TLS listener: give --proxy-tls-port too")

    def describe(self) -> str:
        """One line for reports: how the proxy runs, never its credentials."""
        how = (f"image {self.image}" + (f", command {self.command!r}" if self.command else "")) if self.image else \
            f"command {self.command!r}" if self.command else f"running at {redact_text(self.url or '')}"
        mode = "intercepting with its CA" if self.ca_pem else "tunnelling (no interception CA given)"
        tls = f"; https:// on port {self.tls_port}" if self.tls_port is not None else ""
        return f"vendor proxy ({how}; {mode}{'; Basic authentication' if self.auth else ''}{tls})"


def parse_listen(text: str, kind: type[Endpoint] = Endpoint) -> Endpoint:
    """``ADDR:PORT`` (``[::1]:PORT`` for IPv6) as an endpoint of ``kind``: the lab's (loopback only),
    or ``ClusterEndpoint`` for an address of an existing cluster's network."""
    host, _, port = text.rpartition(":")
    if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
        raise VendorProxyError(f"--proxy-listen {text!r} is not ADDRESS:PORT")
    try:
        return kind(host.strip("[]"), int(port))
    except ValueError as exc:
        raise VendorProxyError(f"--proxy-listen {text!r}: {exc}") from None


async def wait_until_closed(endpoints: list[Endpoint], deadline_seconds: float = 5.0) -> bool:
    """Wait, with a deadline, until no client connection to any of ``endpoints`` is open (a proxy
    that logs a tunnel when it closes has then logged every one so far). False if one stays open."""
    deadline = time.monotonic() + deadline_seconds
    while any(open_connections(endpoint) for endpoint in endpoints):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def fill(text: str, values: dict[str, str]) -> str:
    """``text`` with the known ``{placeholders}`` replaced; other braces are left alone (a
    vendor's configuration may use them for its own syntax)."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def open_connections(endpoint: Endpoint, table: str | None = None) -> int:
    """How many TCP connections to ``endpoint`` are open (established, or closed by the client but
    not yet by the proxy), from ``/proc/net/tcp``; ``table`` is that file's text (for tests)."""
    if table is None:
        try:
            table = Path("/proc/net/tcp").read_text()
        except OSError:
            return 0
    wanted = f"{int(ipaddress.IPv4Address(endpoint.address)).to_bytes(4, 'big')[::-1].hex().upper()}:" \
             f"{endpoint.port:04X}"
    count = 0
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[1] == wanted and fields[3] in _OPEN_STATES:
            count += 1
    return count


class VendorProxy:
    """One vendor proxy: its process (when the lab starts it), its addresses and its logs."""

    def __init__(self, settings: VendorProxySettings) -> None:
        self.settings = settings
        if settings.command is None and settings.url is None and settings.image is None:
            raise VendorProxyError("a vendor proxy needs a command or an image to start, or the URL of a running one")
        self.directory = settings.state_dir
        self.config_dir: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._container: ProxyContainer | None = None
        self._output_path = self.directory / "proxy.log"
        self.started_seconds: float | None = None
        # --proxy-config entries not copied (links, FIFOs, devices): the user is told (log, `up`).
        self.skipped: list[str] = []
        self._earlier_flows: list[dict[str, Any]] = []  # logged in a {config_dir} a restart replaced
        self._collected: Path | None = None  # the {config_dir} whose logs are in the lab's directory
        self._collection: tuple[list[Path], list[Skipped]] = ([], [])  # what was copied from it
        self._collections = 0
        # {instance}: unique on this machine (the lab's and other runs' proxies alike), alphanumeric
        # because Squid's -n accepts nothing else.
        self.instance = f"proxyfleet{secrets.token_hex(6)}"
        if settings.url is not None:
            parts = urlsplit(settings.url)
            if parts.scheme != "http" or not parts.hostname:
                raise VendorProxyError(f"the proxy URL {redact_text(settings.url)!r} is not http://host:port")
            try:
                self._listen = Endpoint(parts.hostname, parts.port or 80)
            except ValueError as exc:
                raise VendorProxyError(f"the proxy URL {redact_text(settings.url)!r}: {exc}") from None
        else:
            self._listen = settings.listen

    # --- what the lab reads -----------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        return self._listen

    @property
    def tls_endpoint(self) -> Endpoint | None:
        """Where its TLS listener is (an ``https://`` proxy URL), if it has one."""
        port = self.settings.tls_port
        return Endpoint(self._listen.address, port) if port is not None else None

    @property
    def endpoints(self) -> list[Endpoint]:
        return [self._listen] + ([self.tls_endpoint] if self.tls_endpoint is not None else [])

    @property
    def started_by_lab(self) -> bool:
        return self.settings.url is None

    @property
    def running(self) -> bool:
        if not self.started_by_lab:
            return True  # not ours to stop: reachable or not, it is "up" as far as the lab knows
        if self.settings.image is not None:
            return self._container is not None  # started and not stopped (asking the engine blocks)
        return self._process is not None and self._process.returncode is None

    @property
    def intercepts(self) -> bool:
        """Whether the vendor declared an interception CA (``--proxy-ca``)."""
        return self.settings.ca_pem is not None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def values(self) -> dict[str, str]:
        assert self.config_dir is not None
        return {"config_dir": str(self.config_dir), "instance": self.instance, "listen_host": self._listen.address,
                "listen_port": str(self._listen.port), "hosts_file": str(self.config_dir / "hosts"),
                "egress_address": self.settings.egress_address,
                "public_ca_file": str(self.config_dir / "public-ca.crt"),
                **({"tls_port": str(self.settings.tls_port), "tls_cert_file": str(self.config_dir / "proxy-tls.crt"),
                    "tls_key_file": str(self.config_dir / "proxy-tls.key")} if self.settings.tls_port else {})}

    @property
    def access_log_path(self) -> Path | None:
        template = self.settings.access_log
        if template is None and self.config_dir is None:
            return None
        if template is None:
            template = DEFAULT_ACCESS_LOG
        if self.config_dir is None:
            return Path(template) if "{" not in template else None
        return Path(fill(template, self.values()))

    def flows(self) -> list[dict[str, Any]]:
        """The proxy's own access log as flow records (empty when it writes none we can read),
        earlier starts' first: each start has its own ``{config_dir}``, and its own log there."""
        return self._earlier_flows + self._current_flows()

    def _current_flows(self) -> list[dict[str, Any]]:
        path = self.access_log_path
        if path is None:
            return []
        try:
            data = proxylogs.read_log(self.config_dir, path)
        except OSError:
            return []
        return read_lines(data.decode(errors="replace").splitlines(), self.settings.log_format).records

    async def settle(self, deadline_seconds: float = 5.0) -> bool:
        """Wait until no client connection to the proxy is open, so every transaction so far has
        its access-log line (Squid writes a tunnel's when it closes). False if one stays open."""
        return await wait_until_closed(self.endpoints, deadline_seconds)

    # --- lifecycle ----------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Make a new ``{config_dir}`` and fill it; if that fails, the directory is deleted again.
        A restart's directory is new too: the last one was the proxy's, with whatever it left."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.remove()
        # Its own directory, outside the lab's private one, so a proxy that drops privileges
        # can read its files and write its logs there — and nothing else of the lab's.
        parent = self.settings.config_parent
        try:
            parent = parent or configdirs.default_parent()
            for leftover in configdirs.sweep(parent):  # of runs killed outright
                log.info("removed %s: the proxyfleet process that made it has ended", leftover)
            self.config_dir = configdirs.make(parent)
        except NotPrivateError as exc:
            raise VendorProxyError(str(exc)) from None
        try:
            self._fill()
        except BaseException:
            self.remove()
            raise

    def _fill(self) -> None:
        # The directory is new and ours (0700) until handed over: nothing of the proxy's is in it yet.
        assert self.config_dir is not None
        values = self.values()
        write_private(self.config_dir / "hosts", self.settings.hosts_text)
        (self.config_dir / "public-ca.crt").write_bytes(self.settings.public_ca_pem)
        skipped: list[str] = []
        for source in self.settings.config_files:
            for relative, content in self._config_files(source, skipped):
                try:
                    data: bytes | str = fill(content.decode(), values)
                except UnicodeDecodeError:
                    data = content  # a binary file (a key, a database): as is
                write_private(self.config_dir.joinpath(*relative.parts), data)
        if skipped and skipped != self.skipped:
            log.warning("not copied into the proxy's {config_dir}: %s", "; ".join(skipped))
        self.skipped = skipped
        if self.settings.ca_pem is not None:
            (self.config_dir / "proxy-ca.crt").write_bytes(self.settings.ca_pem)
        if self.settings.tls_cert_pem is not None and self.settings.tls_key_pem is not None:
            (self.config_dir / "proxy-tls.crt").write_bytes(self.settings.tls_cert_pem)
            write_private(self.config_dir / "proxy-tls.key", self.settings.tls_key_pem)
        if self.settings.user is not None:
            self._hand_over(self.settings.user)

    @staticmethod
    def _config_files(source: Path, skipped: list[str]) -> list[tuple[PurePosixPath, bytes]]:
        """The regular files of one ``--proxy-config`` (relative path, contents). ``source`` itself
        was named by the user and is followed if it is a link; below a directory nothing is, and
        links and non-regular files are left out (added to ``skipped``): following one would copy
        whatever it points at (``/proc/self/environ``, a kubeconfig) to the proxy's user."""
        if not os.path.exists(source):
            raise VendorProxyError(f"the proxy configuration {source} does not exist")
        try:
            if os.path.isdir(source):
                files, left_out = regular_files(source, CONFIG_FILE_LIMIT)
                skipped += [f"{source}/{entry.path} ({entry.why})" for entry in left_out]
                return files
            return [(PurePosixPath(source.name), read_named(source, CONFIG_FILE_LIMIT))]
        except UnsafeFileError:
            raise VendorProxyError(f"the proxy configuration {source} is not a regular file or directory") from None
        except OSError as exc:
            raise VendorProxyError(f"cannot read the proxy configuration {source}: {exc.strerror or exc}") from None

    def _hand_over(self, user: str) -> None:
        """Give the configuration directory to the user the proxy runs as."""
        uid, gid = user_ids(user)
        assert self.config_dir is not None
        if os.geteuid() != 0:
            if uid != os.geteuid():
                raise VendorProxyError(f"only root can hand the proxy's files to {user!r}; run the proxy as "
                                       "yourself (leave out --proxy-user) or run proxyfleet as root")
            return
        chown_tree(self.config_dir, uid, gid)

    def _identity(self) -> dict[str, Any]:
        """As root with ``user`` set, the proxy runs as that user from its first instruction, so
        whatever its command does first (Squid's certificate database, say) belongs to it too."""
        if self.settings.user is None or os.geteuid() != 0 or self.settings.own_etc_hosts:
            return {}  # (in its own mount namespace it becomes the user after the mount: _argv)
        uid, gid = user_ids(self.settings.user)
        return {"user": uid, "group": gid, "extra_groups": []}

    def _argv(self) -> list[str]:
        assert self.settings.command is not None
        try:
            argv = command_line(self.settings.command, self.values())
        except ExternalReconcilerError as exc:
            raise VendorProxyError(str(exc).replace("reconciler", "proxy")) from None
        return private_etc_hosts(argv, Path(self.values()["hosts_file"]), self.settings.user) \
            if self.settings.own_etc_hosts else argv

    async def start(self, startup_limit: float = STARTUP_LIMIT) -> None:
        """Start the process (or check that the running proxy answers) and wait until it listens:
        ``startup_limit`` seconds from when it runs (a container's creation, its image copied on a
        slow storage driver, is not counted), longer while it is still working (``StartupClock``)."""
        if self.started_by_lab and self.running:
            return
        started = time.monotonic()
        try:
            self._prepare()
            if self.settings.image is not None:
                await self._start_container(self.settings.image)
            elif self.started_by_lab:
                await self._start_process()
            root = await self._root_pid()
            await self._wait_listening(StartupClock(startup_limit, lambda: root, process_monitor().stalled))
        except BaseException:
            # A proxy that did not start leaves nothing behind: its logs go to the lab's directory
            # (for the error), its configuration directory (maybe keys) is deleted.
            await self.stop()
            self.remove()
            raise
        self.started_seconds = time.monotonic() - started

    async def _start_process(self) -> None:
        argv = self._argv()
        output = open_private_append(self._output_path)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=output,
                start_new_session=True, preexec_fn=die_with_parent, **self._identity())
        except OSError as exc:
            raise VendorProxyError(f"cannot start the proxy {argv[0]!r}: {exc.strerror or exc}") from None
        finally:
            output.close()

    async def _start_container(self, image: str) -> None:
        assert self.config_dir is not None
        extra_hosts = {}
        for line in self.settings.hosts_text.splitlines():
            fields = line.split()
            if len(fields) >= 2 and not fields[0].startswith("#"):
                for name in fields[1:]:
                    extra_hosts[name] = fields[0]
        container = ProxyContainer(image, self._argv() if self.settings.command else None, self.config_dir,
                                   extra_hosts, self._container_user(), self._output_path)
        try:
            await asyncio.to_thread(container.start)
        except ContainerError as exc:
            raise VendorProxyError(str(exc)) from None
        self._container = container

    def _container_user(self) -> str | None:
        """``uid:gid`` for the container: the proxy user's on this host (the image's names may differ)."""
        if self.settings.user is None:
            return None
        uid, gid = user_ids(self.settings.user)
        return f"{uid}:{gid}"

    def _failure_detail(self) -> str:
        """What the proxy printed (its own output, quoted: its end, redacted, control characters
        escaped), and where copies of the logs it keeps in ``{config_dir}`` are (Squid says why it
        stopped in its cache.log, not on its output): named, never quoted — they are the proxy's
        to fill, and an error ends up in reports."""
        output = self._container.logs(tail=200) if self._container is not None else \
            proxylogs.read_output(self._output_path)
        detail = f"its output:\n{proxylogs.quote_output(output) or '(no output)'}"
        if self.config_dir is None:
            return detail
        access_log = self.access_log_path
        exclude = frozenset([access_log]) if access_log is not None else frozenset()  # says nothing of starting
        if self.settings.state_kept:
            copied, skipped = self._collect_logs()
            copied = [path for path in copied if self.config_dir / path.name not in exclude]
        else:
            into = proxylogs.kept_directory()
            copied, skipped = proxylogs.copy_logs(self.config_dir, into, exclude)
            if not copied:
                into.rmdir()  # nothing to keep
        if copied:
            detail += (f"\nits logs (copied from {{config_dir}}, kept): {', '.join(map(str, sorted(copied)))} "
                       "(a proxy like Squid writes there why it stopped)")
        if skipped:
            detail += f"\nnot copied from {{config_dir}}: {', '.join(map(str, skipped))}"
        return detail

    async def _root_pid(self) -> int | None:
        """The started proxy's first process as this host sees it (a container's init), if known."""
        if self._container is not None:
            return await asyncio.to_thread(lambda: self._container.pid if self._container is not None else None)
        return self.pid if self.started_by_lab else None

    async def _wait_listening(self, clock: StartupClock) -> None:
        while True:
            if self.settings.image is not None:
                exited = not await asyncio.to_thread(container_up, self._container)
            else:
                exited = self.started_by_lab and not self.running
            if exited:
                raise VendorProxyError(f"the proxy exited during start-up; {self._failure_detail()}")
            try:
                for endpoint in self.endpoints:  # every listener, its TLS one too
                    # bounded: a listener that never accepts (its queue full) holds a connect in SYN
                    # retries for two minutes, blind to the proxy's exit
                    async with asyncio.timeout(READY_LOOK_SECONDS):
                        _, writer = await asyncio.open_connection(endpoint.address, endpoint.port)
                        writer.close()  # closed from this end first: no TIME_WAIT on the proxy's port
                        await writer.wait_closed()
                return
            except OSError as exc:  # TimeoutError is an OSError
                if clock.expired():
                    what = "did not start listening" if self.started_by_lab else "does not answer"
                    reason = exc.strerror or str(exc) or f"no answer within {READY_LOOK_SECONDS:g} s"
                    raise VendorProxyError(
                        f"the proxy {what} on {endpoint.address}:{endpoint.port} ({reason}; "
                        f"{clock.why()})"
                        + (f"; {self._failure_detail()}" if self.started_by_lab else "")) from None
                await asyncio.sleep(0.05)

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM the process group (SIGKILL after ``grace``); keep its logs in the lab's directory."""
        container, self._container = self._container, None
        if container is not None:
            await asyncio.to_thread(container.stop, grace)
        process, self._process = self._process, None
        if process is not None:
            await terminate_group(process, grace)
        self._collect_logs()

    def _collect_logs(self) -> tuple[list[Path], list[Skipped]]:
        """Copy the proxy's logs (not its configuration: it may hold keys) into the lab's directory,
        once per ``{config_dir}`` (a restart's are added to the earlier starts'); the copies, and
        what was not copied."""
        if self.config_dir is None:
            return [], []
        if self._collected != self.config_dir:
            self._collection = proxylogs.copy_logs(self.config_dir, self.directory, append=self._collections > 0)
            if self._collection[1]:
                log.warning("the proxy's logs not kept (not regular files in its {config_dir}): %s",
                            ", ".join(map(str, self._collection[1])))
            self._collected = self.config_dir
            self._collections += 1
        return self._collection

    def remove(self) -> None:
        """Delete the configuration directory (after ``stop``), its logs kept first: copies in
        the lab's directory, and its access log's flows for ``flows``."""
        if self.config_dir is None:
            return
        self._collect_logs()
        access_log = self.access_log_path
        if access_log is not None and access_log.is_relative_to(self.config_dir):
            self._earlier_flows += self._current_flows()
        if not configdirs.remove(self.config_dir):
            log.warning("could not remove all of the proxy's configuration directory %s", self.config_dir)
        self.config_dir = None

    # --- as the lab's proxy -----------------------------------------------------------------

    def url(self, host: str | None = None, with_credentials: bool = True) -> str:
        """Its URL, with the nodes' credentials percent-encoded in it unless ``with_credentials`` is off."""
        return self._with_auth(f"http://{host or self._listen.address}:{self._listen.port}", with_credentials)

    def https_url(self, host: str | None = None, with_credentials: bool = True) -> str:
        """The URL of its TLS listener (its plain one when it has none)."""
        if self.settings.tls_port is None:
            return self.url(host, with_credentials)
        return self._with_auth(f"https://{host or self._listen.address}:{self.settings.tls_port}", with_credentials)

    def _with_auth(self, url: str, with_credentials: bool) -> str:
        return with_userinfo(url, self.settings.auth) if self.settings.auth and with_credentials else url


def private_etc_hosts(argv: list[str], hosts_file: Path, user: str | None) -> list[str]:
    """``argv`` in a mount namespace of its own whose ``/etc/hosts`` is ``hosts_file`` (the rest of
    the machine keeps its own), then as ``user`` if given: ``unshare`` and ``mount`` need root."""
    if os.geteuid() != 0:
        raise VendorProxyError("--proxy-etc-hosts needs root (a mount namespace with /etc/hosts bound over)")
    drop: list[str] = []
    if user is not None:
        uid, gid = user_ids(user)
        drop = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts_file), *drop, *argv]


def user_ids(user: str) -> tuple[int, int]:
    """(uid, gid) of a user name on this machine, or of ``uid`` / ``uid:gid`` given as numbers."""
    uid_text, _, gid_text = user.partition(":")
    if uid_text.isdigit() and (not gid_text or gid_text.isdigit()):
        return int(uid_text), int(gid_text or uid_text)
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise VendorProxyError(f"the proxy user {user!r} does not exist on this machine") from None
    return entry.pw_uid, entry.pw_gid


def container_up(container: ProxyContainer | None) -> bool:
    """Whether the engine says the container is still up (a blocking call)."""
    return container is not None and container.running


def port_is_free(address: str, port: int) -> bool:
    """Whether ``address:port`` can be bound now (a vendor proxy's listening address)."""
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True
