"""The whole lab as one async context manager.

Brings up, in order: the lab network table and CAs, the control plane, the origins, the proxy
(the real mitmdump), the fleet (whose kubelets talk to the control plane through the lab
network), and optionally a reconciler. Tears down in reverse order, every step guarded, also
when start-up fails half-way or the task is cancelled (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import functools
import json
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import trustme
import yaml
from kubernetes import client

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.certificates import Certificate
from proxyfleet.core.contract import (
    CONFIG_GROUP,
    CONFIG_VERSION,
    OPERATOR_NAMESPACE,
    OPERATOR_REBOOT_TIMEOUT,
    PROXIES,
    RECONCILER_RESYNC_PERIOD,
)
from proxyfleet.core.gcpauses import process_gc_pauses
from proxyfleet.core.kubeconfig import api_client
from proxyfleet.core.noproxy.urls import with_userinfo
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.core.process_limits import collect_garbage_less_often, raise_open_file_limit
from proxyfleet.harness.lab import admin, capibootstrap
from proxyfleet.harness.lab.addressclaims import NoFreeLabIndex, claim_lab_index, release
from proxyfleet.harness.lab.external import ExternalReconciler, ExternalReconcilerError, command_line
from proxyfleet.harness.lab.vendor import (
    UNBOUND_EGRESS,
    VendorProxy,
    VendorProxyError,
    VendorProxySettings,
    VendorProxySpec,
)
from proxyfleet.harness.reconciler import Reconciler, ReconcilerSettings, make_reconciler
from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.controlplane.disruption import pod_ready
from proxyfleet.simulators.controlplane.resources import PODS, find_type
from proxyfleet.simulators.fleet import Fleet, FleetSettings
from proxyfleet.simulators.kubelet import KubeletSettings
from proxyfleet.simulators.network import PROXY_NETWORK, Endpoint, LabNetwork, NetworkError
from proxyfleet.simulators.origins.catalog import OriginPortError, Origins, standard_hosts_file, start_origins
from proxyfleet.simulators.origins.destinations import Destination, DestinationError
from proxyfleet.simulators.origins.server import Violation
from proxyfleet.simulators.pki import new_public_ca, public_roots, system_bundle_pem
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings
from proxyfleet.simulators.windows.trust import windows_builtin_roots

log = logging.getLogger(__name__)
# asyncio gives every TLS connection a 256 KiB read buffer; a lab holds thousands of them (each
# kubelet's API connection, on both ends). 64 KiB reads are plenty for this traffic.
TLS_READ_BUFFER = 64 * 1024


def tune_tls_buffers() -> None:
    """Shrink asyncio's per-connection TLS read buffer (see TLS_READ_BUFFER)."""
    asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER


PROXY_HOST = "proxy.corp.internal"
PROXY_PORT = 3128
# A second corporate proxy, with credentials full of characters that are code in PowerShell:
# a proxy URL change moves nodes to it, and the values must arrive byte for byte.
PROXY2_HOST = "proxy2.corp.internal"
PROXY2_PORT = 8080
PROXY2_AUTH = "o'brien:pa$(x)"


# Destinations the lab's nodes reach directly when a proxy is set: the intranet registry by name
# and by IP, and the corporate domain.
DEFAULT_NO_PROXY = "registry.corp.internal,10.0.5.20,intranet.corp.internal"


# The address block of a lab whose proxy is already running (``--proxy-url``): fixed, so that
# proxy can be given the lab's hosts file and egress address before the lab starts.
WELL_KNOWN_LAB_INDEX = 1


def well_known_plan() -> tuple[str, str]:
    """(hosts file, egress address) a proxy started by hand must use for a ``--proxy-url`` lab."""
    network = LabNetwork(WELL_KNOWN_LAB_INDEX)
    network.allocate(PROXY_NETWORK)  # the lab proxy's listening address, unused with --proxy-url
    egress = network.allocate(PROXY_NETWORK)
    return standard_hosts_file(network), egress


class LabError(RuntimeError):
    """The lab cannot start as asked."""


def customer_settings(install_config: str | None, targets: list[tuple[str, int, str | None]],
                      vendor_ca_pem: bytes | None = None) -> dict[str, Any]:
    """``LabSettings`` fields that put a customer's settings on the lab: their proxy (host, port,
    credentials) names resolve to the lab proxy, which asks for their credentials; an install-config
    with a proxy also trusts the lab proxy's (pre-generated) MITM CA, since that proxy intercepts."""
    auths = {t[2] for t in targets if t[2]}
    overrides: dict[str, Any] = {"proxy_aliases": [(t[0], int(t[1])) for t in targets],
                                 "proxy_auth": next(iter(auths)) if auths else None}
    if install_config:
        config = yaml.safe_load(install_config)
        if config.get("proxy"):
            mitm = trustme.CA(organization_name="proxyfleet corporate proxy", key_type=trustme.KeyType.RSA)
            bundle = (config.get("additionalTrustBundle") or "").rstrip("\n")
            config["additionalTrustBundle"] = (bundle + "\n" if bundle else "") + mitm.cert_pem.bytes().decode() \
                + (vendor_ca_pem or b"").decode()  # a vendor proxy (--proxy-ca) intercepts with its own
            overrides.update(mitm_ca=mitm, install_proxy=True)
        overrides["install_config"] = yaml.safe_dump(config)
    return overrides


@dataclass
class LabSettings:
    nodes: int = 3
    linux_nodes: int = 0  # Linux nodes beside the Windows ones (they need root)
    linux_flavour: str = "rhcos"
    # CAPI machines instead: the Linux nodes (Debian) boot with the proxy in their bootstrap data,
    # rendered from the install's proxy in this style (``capibootstrap.STYLES``; needs install_proxy).
    linux_bootstrap: str | None = None
    state_dir: Path | None = None  # None: a temporary directory, removed at the end
    install_config: str | None = None
    proxy: bool = True
    proxy_auth: str | None = None  # "user:password"
    mitm_ca: trustme.CA | None = None
    shutdown_delay: float = 0.2
    reboot_duration: float = 0.6
    heartbeat: float = 1.0  # kubelet lease renewal period (at most HEARTBEATS_PER_SECOND in all: ``timing``)
    node_grace: float = 4.0  # lifecycle controller: silent longer than this -> NotReady
    restart_reads_current_environment: bool = False
    # As harsh as production by default: a fleet built over time has both OpenSSH default
    # shells; services come up after sshd; Restart-Computer sometimes returns no exit status.
    default_shell: str = "mixed"
    service_stage_seconds: float = 0.25
    lost_exit_status_rate: float = 0.3
    seed: int = 0
    keep: bool = False  # keep the state directory
    # ``state_dir`` is deleted when the run ends (``conformance`` without --keep): the logs of a
    # proxy that did not start are then kept in a directory of their own.
    state_is_scratch: bool = False
    second_proxy: bool = False  # PROXY2_HOST with PROXY2_AUTH
    install_proxy: bool = False  # generate an install-config with the lab proxy and its CA
    install_no_proxy: str = DEFAULT_NO_PROXY  # that install-config's noProxy
    # The reconciler the lab runs: a variant name ("correct" or a broken one), or None for none.
    reconciler: str | None = None
    # An external reconciler instead: a command line with {kubeconfig}, {ssh_port}, {namespace},
    # {max_unavailable}, {reboot_timeout} and {resync_period} placeholders, started after the fleet
    # and stopped (SIGTERM) first.
    reconciler_command: str | None = None
    # "olm": run it as OLM runs WMCO, with the Proxy status variables, restarted when they change.
    reconciler_env: str = "none"
    # How long the external reconciler waits for a node to come back from its reboot before it
    # reports it (what it declares; {reboot_timeout} in its command): the judge waits that long for
    # a stuck node's report. Default: the real operator's.
    reconciler_reboot_timeout: float = OPERATOR_REBOOT_TIMEOUT
    # How often the external reconciler looks at every node again (what it declares; {resync_period}
    # in its command): a step that changes a node out of band waits that long more for its repair.
    reconciler_resync_period: float = RECONCILER_RESYNC_PERIOD
    max_unavailable: int = 0  # 0: max_unavailable_share of the nodes, at least max_unavailable_floor
    max_unavailable_floor: int = 1
    max_unavailable_share: float = 0.5
    # More (host, port) names for the lab proxy: a customer's proxy hosts in ``proxyfleet repro``.
    proxy_aliases: list[tuple[str, int]] = field(default_factory=list)
    settle_delay: float = 0.3
    # How often the lab's own reconciler looks at every node again (its drift repair): what a
    # scenario asks for (drift: 3 s), or None for the lab's default; ``resync`` caps either by the
    # fleet's size.
    resync_period: float | None = None
    # How long the lab's own reconciler waits for a node to come back from a reboot.
    reboot_timeout: float = 60.0
    # The corporate egress firewall, a property of the network (not of the cluster's Proxy): on,
    # internet origins accept only the proxy's egress address, so before a proxy is configured
    # internet pulls fail, as they would; off, an open network. Changed only by
    # ``Lab.set_egress_firewall``, never as a side effect of a cluster change.
    egress_firewall: bool = True
    # Nodes run workloads, as production nodes do: ReplicaSets of up to 25 pods, each behind a
    # PodDisruptionBudget of one, and a DaemonSet; a reboot must be preceded by a drain. The
    # ReplicaSets have one pod fewer in all than there are nodes: capacity for a drain to place its
    # pods, as production plans it (with a pod on every node, an administrator's cordon and a
    # budget of one, the last node of a two-node fleet could never be drained — kubectl drain
    # would wait forever, rightly). Many services drain side by side (``workloads.SERVICE_PODS``).
    workloads: bool = True
    # A vendor's proxy as the corporate proxy instead of the lab's mitmdump (``--proxy-command``,
    # ``--proxy-url``): the origins then listen on their real ports and the proxy gets a hosts file.
    vendor_proxy: VendorProxySpec | None = None
    # A customer's own destinations (repro --destination): an origin each under its name.
    destinations: list[Destination] = field(default_factory=list)
    # Which /24 of each lab address range the lab takes (a lab with a vendor proxy claims a free
    # one from here up: its origins listen on fixed ports).
    lab_index: int = 0

    def heartbeat_and_grace(self) -> tuple[float, float]:
        """The kubelets' lease period and the lifecycle controller's grace for this fleet: as set,
        until the fleet would renew more than ``HEARTBEATS_PER_SECOND`` leases a second in all;
        past that both grow together (their ratio, what NotReady means, kept). A real cluster's
        kubelets renew every 10 s whatever its size; the lab compresses that to 1 s, which at 1,000
        nodes is 1,000 renewals a second — more than one process can serve while it rolls the
        fleet (1,000 nodes: 10 s and 40 s, a real cluster's own values)."""
        every = self.nodes + self.linux_nodes
        factor = max(1.0, every / (self.heartbeat * HEARTBEATS_PER_SECOND))
        return self.heartbeat * factor, self.node_grace * factor

    def resync(self) -> float:
        """The lab's reconciler's resync period: as set (``RESYNC_SECONDS`` if not), until the
        fleet would be looked at more than ``RESYNC_LOOKS_PER_SECOND`` times a second in all, then
        longer. Every resync looks at every node over SSH; at 1,000 nodes every 10 s that was a
        hundred looks a second (every 3 s, the drift scenario's, 333), all through a rollout that
        takes minutes, competing with the rollout itself. A real operator resyncs every few hours;
        the judge waits for the period this returns where a scenario drifts a node."""
        wanted = self.resync_period if self.resync_period is not None else RESYNC_SECONDS
        return max(wanted, (self.nodes + self.linux_nodes) / RESYNC_LOOKS_PER_SECOND)


# What the lab's simulated kubelets renew at most, in all (a real 1,000-node cluster's rate).
HEARTBEATS_PER_SECOND = 100.0
# The lab's reconciler's resync: every 10 s, and at most this many node looks a second in all
# (10 s up to 100 nodes; 1,000 nodes: every 100 s).
RESYNC_SECONDS = 10.0
RESYNC_LOOKS_PER_SECOND = 10.0

_Part = TypeVar("_Part")


async def _release(claim: IO[bytes]) -> None:
    release(claim)


class LabNotStarted(RuntimeError):
    """A part of the lab was used before the lab started (or after it stopped)."""


@dataclass
class Lab:
    """A running lab; use ``async with Lab(settings) as lab``."""

    settings: LabSettings = field(default_factory=LabSettings)

    def __post_init__(self) -> None:
        self.network = LabNetwork(self.settings.lab_index)
        self.public_ca = new_public_ca()
        self.state_dir: Path = Path()
        # Parts that exist once the lab has started (read them through the properties below).
        self._control_plane: ControlPlane | None = None
        self._origins: Origins | None = None
        self._fleet: Fleet | None = None
        # The corporate proxy: the lab's mitmdump, a vendor's, or None (``settings.proxy`` off).
        self.proxy: ProxyServer | VendorProxy | None = None
        self._temporary: str | None = None
        self.proxy2: ProxyServer | None = None
        self.reconciler: Reconciler | None = None
        self.external_reconciler: ExternalReconciler | None = None
        self._stack: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._api: client.ApiClient | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> Lab:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> None:
        tune_tls_buffers()
        raise_open_file_limit()
        collect_garbage_less_often()  # fewer full collections stopping the loop (kubelets, SSH, judge)
        process_gc_pauses()  # and each one timed: the judge names the collector's part of a step's lag
        if self.settings.state_dir is None:
            self._temporary = tempfile.mkdtemp(prefix="proxyfleet-lab-")
            self.state_dir = Path(self._temporary)
        else:
            try:  # keys, kubeconfigs and logs go there: ours alone, or refused
                self.state_dir = private_directory(self.settings.state_dir)
            except NotPrivateError as exc:
                raise LabError(f"the lab's state directory {exc}") from None
        (self.state_dir / "public-ca.crt").write_bytes(self.public_ca.cert_pem.bytes())
        vendor = self.settings.vendor_proxy
        if vendor is not None:
            # Origins will listen on 443/80: take addresses no other lab on this machine uses.
            try:
                # A running proxy (--proxy-url) was configured for the well-known block; a proxy
                # the lab starts is configured by it, in any other free block.
                index, claim = (claim_lab_index(first=WELL_KNOWN_LAB_INDEX, last=WELL_KNOWN_LAB_INDEX)
                                if vendor.url is not None else
                                claim_lab_index(first=max(WELL_KNOWN_LAB_INDEX + 1, self.settings.lab_index)))
            except (NoFreeLabIndex, NotPrivateError) as exc:  # (the lock files' directory is not ours alone)
                raise LabError(str(exc)) from None
            self._stack.append(("lab address claim", lambda: _release(claim)))
            self.network = LabNetwork(index)
        if vendor is not None and self.settings.mitm_ca is None:
            # The lab's second proxy intercepts with a CA of the lab's (the vendor's key is theirs).
            self.settings.mitm_ca = trustme.CA(organization_name="proxyfleet corporate proxy",
                                               key_type=trustme.KeyType.RSA)
        if vendor is not None and vendor.auth:
            self.settings.proxy_auth = vendor.auth
        if self.settings.install_proxy and self.settings.install_config is None:
            self.settings.install_config = self._install_config_with_proxy()
        proxy_listen = self.network.allocate(PROXY_NETWORK)
        proxy_egress = self.network.allocate(PROXY_NETWORK)
        if vendor is not None and vendor.unbound_egress:
            proxy_egress = UNBOUND_EGRESS  # what its connections leave from: the origins accept that instead

        heartbeat, node_grace = self.settings.heartbeat_and_grace()
        self._control_plane = ControlPlane(ControlPlaneSettings(
            state_dir=self.state_dir / "cluster",
            system_bundle_pem=system_bundle_pem(self.public_ca.cert_pem.bytes().decode()),
            install_config=self.settings.install_config, network=self.network,
            node_grace=node_grace,
            node_monitor_period=max(node_grace / 8, 0.2), bookmark_interval=5.0,
            workload_replicas=max(1, self.settings.nodes - 1) if self.settings.workloads else 0))
        await self.control_plane.start()
        self._stack.append(("control plane", self.control_plane.stop))

        try:
            self._origins = await start_origins(self.network, self.public_ca, proxy_egress,
                                                real_ports=vendor is not None,
                                                destinations=self.settings.destinations)
        except (OriginPortError, DestinationError) as exc:
            raise LabError(str(exc)) from None
        self._stack.append(("origins", self.origins.stop))

        if vendor is not None:
            await self._start_vendor_proxy(vendor, proxy_listen, proxy_egress)
        elif self.settings.proxy:
            self.proxy = ProxyServer(ProxySettings(
                self.state_dir / "proxy", self.network, self.public_ca.cert_pem.bytes(),
                listen_address=proxy_listen, egress_address=proxy_egress,
                auth=self.settings.proxy_auth, mitm_ca=self.settings.mitm_ca))
            await self.proxy.start()
            self._stack.append(("proxy", self.proxy.stop))
            self.network.add(PROXY_HOST, PROXY_PORT, self.proxy.endpoint, "proxy")
            for host, port in self.settings.proxy_aliases:
                self.network.add(host, port, self.proxy.endpoint, "proxy")
            self.proxy.publish_table()
            if self.settings.second_proxy:
                self.proxy2 = ProxyServer(ProxySettings(
                    self.state_dir / "proxy2", self.network, self.public_ca.cert_pem.bytes(),
                    listen_address=self.network.allocate(PROXY_NETWORK), egress_address=proxy_egress,
                    auth=PROXY2_AUTH, mitm_ca=self.proxy.mitm_ca))
                await self.proxy2.start()
                self._stack.append(("second proxy", self.proxy2.stop))
                self.network.add(PROXY2_HOST, PROXY2_PORT, self.proxy2.endpoint, "proxy")
                self.proxy2.publish_table()
                self.proxy.publish_table()
        self.origins.internet_open = not self.settings.egress_firewall
        self.violations_path.write_text("")
        for server in self.origins.servers:
            server.on_violation = self._log_violation

        user_data = await self._capi_bootstrap() if self.settings.linux_bootstrap is not None else None
        kubelet = KubeletSettings(api_url=self.control_plane.internal_url,
                                  token=self.control_plane.kubelet_token, ca_pem=self.control_plane.ca_pem,
                                  lease_interval=heartbeat, status_interval=heartbeat * 5,
                                  lease_duration=int(max(node_grace, 1)))
        self._fleet = Fleet(FleetSettings(
            nodes=self.settings.nodes, state_dir=self.state_dir / "fleet",
            shutdown_delay=self.settings.shutdown_delay, reboot_duration=self.settings.reboot_duration,
            restart_reads_current_environment=self.settings.restart_reads_current_environment,
            default_shell=self.settings.default_shell, service_stage_seconds=self.settings.service_stage_seconds,
            lost_exit_status_rate=self.settings.lost_exit_status_rate, seed=self.settings.seed,
            public_roots=[Certificate.from_pem(self.public_ca.cert_pem.bytes()), *windows_builtin_roots()],
            lab_network=self.network, kubelet=kubelet, linux_nodes=self.settings.linux_nodes,
            linux_flavour="debian" if user_data is not None else self.settings.linux_flavour,
            linux_user_data=user_data,
            linux_public_roots=[Certificate.from_pem(self.public_ca.cert_pem.bytes()), *public_roots()]))
        await self.fleet.start()
        self._stack.append(("fleet", self.fleet.stop))
        control_plane = self.control_plane
        for node in self.fleet.every_node:
            # Was the Node cordoned as the machine went down and as it came back (exact, for the
            # conformance check "drained-while-down")?
            node.outage_observer = lambda n: control_plane.node_unschedulable(n.name)
            node.pods_observer = lambda n: control_plane.pods_to_drain(n.name)
        if self.settings.workloads:
            self._follow_pods()
        await admin.set_ssh_key(self.api(), self.fleet.client_key_path.read_bytes())
        if self.settings.reconciler_command:
            await self._start_external_reconciler(self.settings.reconciler_command)
        elif self.settings.reconciler:
            await self._start_reconciler(self.settings.reconciler)

    async def _start_vendor_proxy(self, vendor: VendorProxySpec, listen_address: str, egress: str) -> None:
        """The vendor's proxy on ``--proxy-listen`` (else the lab's proxy address, port 3128); with
        a second proxy, the lab's mitmdump beside it, intercepting with the lab's CA."""
        listen = vendor.listen or Endpoint(listen_address, PROXY_PORT)
        try:
            proxy = VendorProxy(VendorProxySettings(
                state_dir=self.state_dir / "proxy", listen=listen, egress_address=egress,
                hosts_text=self.network.hosts_file(), command=vendor.command, url=vendor.url,
                config_files=list(vendor.config_files), ca_pem=vendor.ca_pem, auth=vendor.auth,
                user=vendor.user, access_log=vendor.access_log, log_format=vendor.log_format,
                public_ca_pem=self.public_ca.cert_pem.bytes(),
                image=vendor.image, own_etc_hosts=vendor.own_etc_hosts,
                # a temporary state directory, or a run's scratch, goes with the run
                state_kept=self._temporary is None and not self.settings.state_is_scratch,
                **self._proxy_tls_files(vendor, listen)))
            self.proxy = proxy

            async def stop() -> None:
                await proxy.stop()
                proxy.remove()
            self._stack.append(("vendor proxy", stop))
            await proxy.start()
        except VendorProxyError as exc:
            raise LabError(str(exc)) from None
        self.network.add(PROXY_HOST, PROXY_PORT, proxy.endpoint, "proxy")
        if proxy.tls_endpoint is not None:
            self.network.add(PROXY_HOST, proxy.tls_endpoint.port, proxy.tls_endpoint, "proxy")
        for host, port in self.settings.proxy_aliases:
            self.network.add(host, port, proxy.endpoint, "proxy")
        if self.settings.second_proxy:
            assert self.settings.mitm_ca is not None
            self.proxy2 = ProxyServer(ProxySettings(
                self.state_dir / "proxy2", self.network, self.public_ca.cert_pem.bytes(),
                listen_address=self.network.allocate(PROXY_NETWORK), egress_address=egress,
                auth=PROXY2_AUTH, mitm_ca=self.settings.mitm_ca))
            await self.proxy2.start()
            self._stack.append(("second proxy", self.proxy2.stop))
            self.network.add(PROXY2_HOST, PROXY2_PORT, self.proxy2.endpoint, "proxy")
            self.proxy2.publish_table()

    def _proxy_tls_files(self, vendor: VendorProxySpec, listen: Endpoint) -> dict[str, Any]:
        """A server certificate for a started proxy's TLS listener: its names as the nodes use
        them (the virtual name, its address), from the lab's proxy TLS CA."""
        if vendor.tls_port is None or vendor.url is not None:
            return {"tls_port": vendor.tls_port}
        leaf = self.proxy_tls_ca.issue_cert(PROXY_HOST, listen.address, key_type=trustme.KeyType.RSA)
        return {"tls_port": vendor.tls_port, "tls_key_pem": leaf.private_key_pem.bytes(),
                "tls_cert_pem": b"".join(blob.bytes() for blob in leaf.cert_chain_pems)}

    @functools.cached_property
    def proxy_tls_ca(self) -> trustme.CA:
        """The CA of the server certificate the lab gives a vendor proxy's TLS listener."""
        return trustme.CA(organization_name="proxyfleet proxy server CA", key_type=trustme.KeyType.RSA)

    def proxy_tls_ca_pem(self) -> bytes:
        """What nodes must trust to speak TLS to the proxy itself (empty: no TLS listener)."""
        vendor = self.settings.vendor_proxy
        if vendor is None or vendor.tls_port is None:
            return b""
        return vendor.tls_ca_pem if vendor.tls_ca_pem is not None else self.proxy_tls_ca.cert_pem.bytes()

    def fixed_proxy_ca_pems(self) -> list[bytes]:
        """The vendor proxy's CAs the lab cannot rotate (their keys are the vendor's, or the
        proxy's certificate is issued once at start): its interception CA, its TLS listener's."""
        vendor = self.settings.vendor_proxy
        if vendor is None:
            return []
        return [pem for pem in (vendor.ca_pem, self.proxy_tls_ca_pem()) if pem]

    @property
    def vendor_proxy(self) -> VendorProxy | None:
        """The vendor's proxy, when the lab runs one as its corporate proxy."""
        return self.proxy if isinstance(self.proxy, VendorProxy) else None

    def _follow_pods(self) -> None:
        """Wake a node's kubelet when a pod bound to it changes (its pod watch, in effect)."""
        store = self.control_plane.store
        kubelets = {node.kubelet.name: node.kubelet for node in self.fleet.every_node if node.kubelet is not None}
        watcher = store.watch(PODS, None, store.resource_version, lambda obj: True)

        async def follow() -> None:
            while (event := await watcher.queue.get()) is not None:
                pod = event["object"]
                kubelet = kubelets.get(str((pod.get("spec") or {}).get("nodeName")))
                if kubelet is not None and event["type"] != "DELETED" and not pod_ready(pod):
                    kubelet.pods_changed()  # only what the kubelet has to act on

        task = asyncio.get_running_loop().create_task(follow(), name="kubelet pod watch")

        async def stop() -> None:
            store.stop_watch(watcher)
            await stop_task(task)
        self._stack.append(("kubelet pod watch", stop))

    async def stop(self) -> None:
        while self._stack:
            name, stop = self._stack.pop()
            try:
                await asyncio.shield(stop())
            except Exception:
                log.exception("stopping the lab's %s failed", name)
        if self._api is not None:
            self._api.close()  # type: ignore[no-untyped-call]
            self._api = None
        if self._temporary and not self.settings.keep:
            shutil.rmtree(self._temporary, ignore_errors=True)

    @property
    def reconciler_reboot_timeout(self) -> float:
        """How long the reconciler under test waits for a rebooting node before reporting it: the
        lab's own reconciler's setting, or what an external one declares."""
        if self.settings.reconciler_command:
            return self.settings.reconciler_reboot_timeout
        return self.settings.reboot_timeout

    @property
    def reconciler_resync_period(self) -> float:
        """How often the reconciler under test looks at every node again: the lab's own
        reconciler's period (``LabSettings.resync``), or what an external one declares."""
        if self.settings.reconciler_command:
            return self.settings.reconciler_resync_period
        return self.settings.resync()

    @property
    def max_unavailable(self) -> int:
        """The reconciler's disruption budget: given, or a share of every node it drives (one
        budget for both kinds: the reference reconciler rolls them in one queue)."""
        every = self.settings.nodes + self.settings.linux_nodes
        return self.settings.max_unavailable or max(self.settings.max_unavailable_floor,
                                                    int(every * self.settings.max_unavailable_share))

    async def _start_reconciler(self, variant: str, first: bool = True) -> None:
        settings = ReconcilerSettings(
            ssh_port=self.fleet.port, max_unavailable=self.max_unavailable,
            settle_delay=self.settings.settle_delay,
            resync_period=self.settings.resync(), reboot_timeout=self.settings.reboot_timeout,
            backoff_base=0.2, backoff_max=2.0,
            service_start_timeout=30.0, service_poll=0.1, drain_timeout=60.0, drain_retry=0.1)
        reconciler = make_reconciler(api_client(self.kubeconfig), settings, variant)  # its own connection pool
        await reconciler.start()
        self.reconciler = reconciler
        if first:
            self._stack.append(("reconciler", self._stop_reconciler))

    async def _stop_reconciler(self) -> None:
        if self.reconciler is not None:
            await self.reconciler.stop()

    async def kill_reconciler(self) -> None:
        """Kill the reconciler (SIGKILL for an external one; for the lab's own, every task is
        cancelled where it stands and nothing it held in memory survives) and start it again: what
        a crash and a restarted operator pod look like to the nodes and the cluster."""
        if self.external_reconciler is not None:
            await self.external_reconciler.kill()
            await self.external_reconciler.start()
        elif self.reconciler is not None:
            await self.reconciler.stop()
            await self._start_reconciler(self.settings.reconciler or "correct", first=False)
        else:
            raise LabError("this lab runs no reconciler to kill")

    async def _start_external_reconciler(self, template: str) -> None:
        try:
            argv = command_line(template, {"kubeconfig": self.kubeconfig, "ssh_port": self.fleet.port,
                                           "namespace": OPERATOR_NAMESPACE,
                                           "max_unavailable": self.max_unavailable,
                                           "reboot_timeout": f"{self.settings.reconciler_reboot_timeout:g}",
                                           "resync_period": f"{self.settings.reconciler_resync_period:g}"})
            reconciler = ExternalReconciler(argv, self.state_dir / "reconciler.log", self.settings.reconciler_env)
        except ExternalReconcilerError as exc:
            raise LabError(str(exc)) from None
        self.external_reconciler = reconciler
        store = self.control_plane.store
        proxies = find_type(CONFIG_GROUP, CONFIG_VERSION, PROXIES)
        assert proxies is not None
        current = store.list(proxies, None, lambda obj: True)
        try:
            if not await reconciler.proxy_status_changed(current[0].get("status") or {} if current else {}):
                await reconciler.start()
        except ExternalReconcilerError as exc:
            raise LabError(str(exc)) from None
        watcher = store.watch(proxies, None, store.resource_version, lambda obj: True)

        async def follow_proxy() -> None:  # OLM's part: a changed Proxy status restarts the operator
            while (event := await watcher.queue.get()) is not None:
                await reconciler.proxy_status_changed(event["object"].get("status") or {})

        follower = asyncio.get_running_loop().create_task(follow_proxy(), name="olm proxy variables")

        async def stop() -> None:
            await stop_task(follower)
            store.stop_watch(watcher)
            await reconciler.stop()

        self._stack.append(("external reconciler", stop))

    async def _capi_bootstrap(self) -> str:
        """What cluster-apps-operator and CAPI's bootstrap provider give each Linux machine: the
        Secret ``<cluster>-systemd-proxy`` from the cluster's proxy (written to the control plane),
        read back as ``contentFrom.secret`` resolves it, with the proxy's CA, as cloud-init user data."""
        assert self.settings.linux_bootstrap is not None
        try:
            style = capibootstrap.style_named(self.settings.linux_bootstrap)
            if not self.settings.install_proxy:
                raise capibootstrap.BootstrapError("a CAPI bootstrap carries the install's proxy: set install_proxy")
            drop_in = await capibootstrap.publish_secret(self.api())
        except capibootstrap.BootstrapError as exc:
            raise LabError(f"CAPI bootstrap data: {exc}") from None
        return capibootstrap.user_data(style, drop_in, self.user_ca_pem().decode())

    def _install_config_with_proxy(self) -> str:
        """An install-config that sets the lab proxy and trusts its (pre-generated) MITM CA."""
        if self.settings.mitm_ca is None:
            self.settings.mitm_ca = trustme.CA(organization_name="proxyfleet corporate proxy",
                                               key_type=trustme.KeyType.RSA)
        return yaml.safe_dump({
            "apiVersion": "v1", "baseDomain": "example.com", "metadata": {"name": "lab"},
            "proxy": {"httpProxy": self.proxy_url, "httpsProxy": self.proxy_https_url,
                      "noProxy": self.settings.install_no_proxy},
            "additionalTrustBundle": self.user_ca_pem().decode(),
            "additionalTrustBundlePolicy": "Proxyonly"})

    # --- the running parts (not Optional: a lab that has not started says so) --------------------

    @staticmethod
    def _running(part: str, value: _Part | None) -> _Part:
        if value is None:
            raise LabNotStarted(f"the lab's {part} is not running: start the lab first (async with Lab(...))")
        return value

    @property
    def control_plane(self) -> ControlPlane:
        return self._running("control plane", self._control_plane)

    @property
    def origins(self) -> Origins:
        return self._running("origins", self._origins)

    @property
    def fleet(self) -> Fleet:
        return self._running("fleet", self._fleet)

    @property
    def violations_path(self) -> Path:
        """Connections the egress firewall refused, one JSON object per line, written as they happen."""
        return self.state_dir / "firewall-violations.jsonl"

    def _log_violation(self, violation: Violation) -> None:
        with self.violations_path.open("a") as log:
            log.write(json.dumps(violation.as_json()) + "\n")

    @property
    def egress_firewall(self) -> bool:
        """Whether internet origins accept only the proxy (the corporate egress firewall is up)."""
        return not self.origins.internet_open

    def set_egress_firewall(self, on: bool) -> None:
        """A change of the network itself (say, the company retires its proxy and opens egress):
        an explicit lab action, which a scenario takes in the open."""
        self.origins.internet_open = not on

    def proxy_server(self, url: str | None) -> ProxyServer | VendorProxy | None:
        """The lab proxy a proxy URL (as in Proxy status) reaches through the lab table, if any."""
        if not url:
            return None
        parts = urlsplit(url)
        try:
            route = self.network.resolve(parts.hostname or "", parts.port or 80)
        except NetworkError:
            return None
        for server in (self.proxy, self.proxy2):
            if server is not None and route.endpoint in server.endpoints:
                return server
        return None

    async def take_proxy_down(self, server: ProxyServer | VendorProxy) -> None:
        """Stop one proxy (its address refuses connections): a proxy outage."""
        await server.stop()

    async def bring_proxy_up(self, server: ProxyServer | VendorProxy) -> None:
        """End ``take_proxy_down``: the same proxy on the same address and port, flows kept."""
        await server.start()

    async def rotate_proxy_ca(self, server: ProxyServer, new_ca: trustme.CA) -> None:
        """Restart one proxy with a new MITM CA on the same address and port (the corporate
        proxy's CA rotation); flows logged so far are kept."""
        await server.stop()
        server.mitm_ca = new_ca
        await server.start()

    # --- conveniences ---------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.control_plane.kubeconfig_path

    def api(self) -> client.ApiClient:
        """A ``kubernetes`` client for the lab (call it from a thread: it blocks)."""
        if self._api is None:
            self._api = api_client(self.kubeconfig)
        return self._api

    @property
    def proxy2_url(self) -> str:
        """The second proxy's URL, credentials included (they contain PowerShell metacharacters)."""
        return with_userinfo(f"http://{PROXY2_HOST}:{PROXY2_PORT}", PROXY2_AUTH)

    @property
    def proxy_url(self) -> str:
        """The proxy URL a cluster admin would put in Proxy.spec (virtual name, credentials)."""
        return self._with_auth(f"http://{PROXY_HOST}:{PROXY_PORT}")

    @property
    def proxy_https_url(self) -> str:
        """The proxy URL for ``httpsProxy``: ``https://`` to a vendor proxy's TLS listener when it
        has one (OpenShift accepts ``https://`` there only), else ``proxy_url``."""
        vendor = self.settings.vendor_proxy
        if vendor is None or vendor.tls_port is None:
            return self.proxy_url
        return self._with_auth(f"https://{PROXY_HOST}:{vendor.tls_port}")

    def _with_auth(self, url: str) -> str:
        """``url`` with the lab proxy's credentials, percent-encoded (a ``/``, ``#`` or ``@`` in a
        password from --proxy-auth-file must not end the authority)."""
        return with_userinfo(url, self.settings.proxy_auth) if self.settings.proxy_auth else url

    def user_ca_pem(self) -> bytes:
        """The CAs the company distributes for its proxies: the lab proxy's MITM CA; with a
        vendor's proxy, its interception CA (if it intercepts) and the lab's own."""
        vendor = self.settings.vendor_proxy
        lab_ca = self.settings.mitm_ca.cert_pem.bytes() if self.settings.mitm_ca is not None else b""
        if vendor is not None:
            return (vendor.ca_pem or b"") + self.proxy_tls_ca_pem() + lab_ca
        return lab_ca

    @property
    def mitm_ca_pem(self) -> bytes:
        """The CA bundle nodes must trust for the corporate proxy (see ``user_ca_pem``)."""
        if isinstance(self.proxy, ProxyServer):
            return self.proxy.mitm_ca_pem
        return self.user_ca_pem()

    async def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking ``kubernetes`` client call without stalling the lab's event loop."""
        return await asyncio.to_thread(function, *args, **kwargs)

