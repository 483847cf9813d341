"""The proxy a run against an existing cluster starts itself (``--proxy-listen ADDR:PORT``): by default
the lab's instrumented mitmdump, intercepting with a CA the run makes, so every flow is attributed
to the node it came from; or a vendor's (``--proxy-command``/``--proxy-image``, as in the lab),
judged by its access log (any format ``accesslogs`` reads). The run's mitmdump demands the
``--proxy-auth-file`` credentials when given, serves only the instances' addresses and, resolving
through the system, reaches no address of the machine it runs on (a vendor's proxy is configured by
its vendor). It resolves upstream names through ``--proxy-hosts`` (or the system), leaves from
``--proxy-egress`` (or wherever the system routes it) and trusts ``--proxy-upstream-ca`` (or
certifi's public roots) upstream — for a vendor's, those fill ``{hosts_file}``, ``{egress_address}``
and ``{public_ca_file}``. It runs on an event loop of its own, in a thread, for the whole run: the
scenarios run in this process's main thread."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import certifi
import trustme

from proxyfleet.harness.lab.vendor import VendorProxy, VendorProxySettings
from proxyfleet.simulators.network import Endpoint
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings

START_LIMIT = 90.0  # the proxy's own start-up, from when it runs (see VendorProxy.start)
# What a vendor's config gets for {hosts_file} when the run was given none: the system resolves.
NO_HOSTS = "# proxyfleet: no --proxy-hosts given; the proxy resolves names itself\n"


@dataclass(frozen=True)
class RunProxySpec:
    """Where and how the run's proxy runs (checked before anything starts). ``command``/``image``:
    a vendor's proxy, with the lab's meaning of those options; else the run's mitmdump."""

    listen: Endpoint  # a ClusterEndpoint: the user's network, not held to loopback
    hosts_file: Path | None = None
    egress_address: str | None = None
    upstream_ca: Path | None = None
    command: str | None = None
    image: str | None = None
    config_files: tuple[Path, ...] = ()
    vendor_ca_pem: bytes | None = None  # a vendor's interception CA (--proxy-ca)
    user: str | None = None
    access_log: str | None = None
    log_format: str = "auto"  # how a vendor's access log is read (``accesslogs``)
    own_etc_hosts: bool = False
    # The run's mitmdump: the credentials it demands ("user:password", from --proxy-auth-file) and
    # the only clients it serves (the instances' addresses). A vendor's proxy enforces its own.
    auth: str | None = None
    allowed_clients: tuple[str, ...] = ()

    @property
    def authority(self) -> str:
        """``ADDR:PORT`` as ``--proxy-listen`` takes it (``[v6]:PORT``)."""
        host = f"[{self.listen.address}]" if ":" in self.listen.address else self.listen.address
        return f"{host}:{self.listen.port}"

    @property
    def url(self) -> str:
        return f"http://{self.authority}"

    @property
    def vendor(self) -> bool:
        return self.command is not None or self.image is not None

    def describe(self) -> str:
        what = (f"a vendor's proxy ({'image ' + self.image if self.image else 'command'})" if self.vendor
                else "the run's own mitmdump")
        return f"{what} on {self.authority}"


class InstanceAddressError(ValueError):
    """An instance whose address the run's proxy cannot know."""


def instance_addresses(names: list[str]) -> list[str]:
    """Every address the instances (``windows-instances`` keys: IP addresses or DNS names) connect
    from, for the run's proxy to serve them and nobody else. A name this machine cannot resolve
    is an error: its node's traffic would be refused."""
    found: dict[str, None] = {}
    for name in names:
        try:
            found[str(ipaddress.ip_address(name))] = None
            continue
        except ValueError:
            pass
        try:
            answers = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise InstanceAddressError(
                f"the instance {name!r} does not resolve here ({exc.strerror or exc}): the run's proxy serves only "
                "the instances' addresses; name the instances by address with --instance ADDR=USER") from None
        for answer in answers:
            found[str(answer[4][0])] = None
    if not found:
        raise InstanceAddressError("the cluster has no Windows instances (windows-instances is empty): the run's "
                                   "proxy would serve nobody; name them with --instance ADDR=USER")
    return list(found)


class RunProxy:
    """``with RunProxy(spec, state_dir) as proxy:`` — started on entry, stopped on exit."""

    def __init__(self, spec: RunProxySpec, state_dir: Path) -> None:
        self.spec = spec
        upstream = spec.upstream_ca.read_bytes() if spec.upstream_ca else Path(certifi.where()).read_bytes()
        self.ca: trustme.CA | None = None
        self.server: ProxyServer | None = None
        self.vendor: VendorProxy | None = None
        if spec.vendor:
            self.vendor = VendorProxy(VendorProxySettings(
                state_dir=state_dir, listen=spec.listen,
                egress_address=spec.egress_address or "",
                hosts_text=spec.hosts_file.read_text() if spec.hosts_file else NO_HOSTS,
                command=spec.command, config_files=list(spec.config_files), ca_pem=spec.vendor_ca_pem,
                user=spec.user, access_log=spec.access_log, log_format=spec.log_format, public_ca_pem=upstream,
                image=spec.image,
                own_etc_hosts=spec.own_etc_hosts))
        else:
            self.ca = trustme.CA(organization_name="proxyfleet run proxy", key_type=trustme.KeyType.RSA)
            self.server = ProxyServer(ProxySettings(
                state_dir=state_dir, network=None, upstream_ca_pem=upstream, listen_address=spec.listen.address,
                egress_address=spec.egress_address, port=spec.listen.port, mitm_ca=self.ca, hosts_file=spec.hosts_file,
                auth=spec.auth, allowed_clients=spec.allowed_clients,
                # Names resolved by the system: never this machine's own addresses (a --proxy-hosts
                # file maps names where its author wants them).
                guard_destinations=spec.hosts_file is None))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="run-proxy", daemon=True)

    @property
    def ca_pems(self) -> list[bytes]:
        """The CAs the nodes must trust for it (the run's interception CA, or the vendor's)."""
        if self.ca is not None:
            return [self.ca.cert_pem.bytes()]
        return [self.spec.vendor_ca_pem] if self.spec.vendor_ca_pem else []

    @property
    def flow_log(self) -> Path | None:
        """The run's mitmdump's JSON flow log (None for a vendor's proxy)."""
        return self.server.flow_log_path if self.server is not None else None

    @property
    def access_log(self) -> Path | None:
        """A vendor's access log (None for the run's mitmdump)."""
        return self.vendor.access_log_path if self.vendor is not None else None

    def __enter__(self) -> RunProxy:
        self._thread.start()
        try:
            proxy = self.server or self.vendor
            assert proxy is not None
            self._until_done(proxy.start(START_LIMIT))
        except BaseException:
            self._shut_down()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._shut_down()

    def _until_done(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` on the proxy's loop and wait for its end, however long it takes: a start
        and a stop are each bounded by their own work (the start-up clock, the stop's grace and
        SIGKILL, the container engine's calls sized to the image), never by a wall-clock figure
        here. A fixed 60 s here once failed a correct run whose container, on a loaded machine
        under dockerd's vfs driver, took longer to stop and delete."""
        asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def _shut_down(self) -> None:
        try:
            proxy = self.server or self.vendor
            assert proxy is not None
            self._until_done(proxy.stop())
        finally:
            if self.vendor is not None:
                self.vendor.remove()  # its configuration directory (maybe keys)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()  # nothing runs on the loop once its work is done: it stops at once
            self._loop.close()
