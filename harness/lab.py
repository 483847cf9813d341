"""The whole lab as one async context manager.

Brings up, in order: the lab network table and CAs, the control plane, the origins, the proxy
(the real mitmdump), the fleet (whose kubelets talk to the control plane through the lab
network), and optionally a reconciler. Tears down in reverse order, every step guarded, also
when start-up fails half-way or the task is cancelled (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import trustme
from kubernetes import client, config

from harness.process_limits import raise_open_file_limit
from simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from simulators.fleet import Fleet, FleetSettings
from simulators.network import PROXY_NETWORK, LabNetwork
from simulators.origins.catalog import Origins, start_origins
from simulators.pki import new_public_ca
from simulators.proxy.runner import ProxyServer, ProxySettings
from simulators.windows.certificates import Certificate
from simulators.windows.kubelet import KubeletSettings

log = logging.getLogger(__name__)
# asyncio gives every TLS connection a 256 KiB read buffer; a lab holds thousands of them (each
# kubelet's API connection, on both ends). 64 KiB reads are plenty for this traffic.
TLS_READ_BUFFER = 64 * 1024


def tune_tls_buffers() -> None:
    """Shrink asyncio's per-connection TLS read buffer (see TLS_READ_BUFFER)."""
    asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER


PROXY_HOST = "proxy.corp.internal"
PROXY_PORT = 3128


@dataclass
class LabSettings:
    nodes: int = 3
    state_dir: Path | None = None  # None: a temporary directory, removed at the end
    install_config: str | None = None
    proxy: bool = True
    proxy_auth: str | None = None  # "user:password"
    mitm_ca: trustme.CA | None = None
    shutdown_delay: float = 0.2
    reboot_duration: float = 0.6
    heartbeat: float = 1.0  # kubelet lease renewal period
    node_grace: float = 4.0  # lifecycle controller: silent longer than this -> NotReady
    restart_reads_current_environment: bool = False
    keep: bool = False  # keep the state directory


@dataclass
class Lab:
    """A running lab; use ``async with Lab(settings) as lab``."""

    settings: LabSettings = field(default_factory=LabSettings)

    def __post_init__(self) -> None:
        self.network = LabNetwork()
        self.public_ca = new_public_ca()
        self.state_dir: Path = Path()
        self.control_plane: ControlPlane | None = None
        self.origins: Origins | None = None
        self.proxy: ProxyServer | None = None
        self.fleet: Fleet | None = None
        self._temporary: str | None = None
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
        if self.settings.state_dir is None:
            self._temporary = tempfile.mkdtemp(prefix="proxyfleet-lab-")
            self.state_dir = Path(self._temporary)
        else:
            self.state_dir = self.settings.state_dir
            self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "public-ca.crt").write_bytes(self.public_ca.cert_pem.bytes())
        proxy_listen = self.network.allocate(PROXY_NETWORK)
        proxy_egress = self.network.allocate(PROXY_NETWORK)

        self.control_plane = ControlPlane(ControlPlaneSettings(
            state_dir=self.state_dir / "cluster", system_bundle_pem=self.public_ca.cert_pem.bytes().decode(),
            install_config=self.settings.install_config, network=self.network,
            node_grace=self.settings.node_grace,
            node_monitor_period=max(self.settings.node_grace / 8, 0.2), bookmark_interval=5.0))
        await self.control_plane.start()
        self._stack.append(("control plane", self.control_plane.stop))

        self.origins = await start_origins(self.network, self.public_ca, proxy_egress)
        self._stack.append(("origins", self.origins.stop))

        if self.settings.proxy:
            self.proxy = ProxyServer(ProxySettings(
                self.state_dir / "proxy", self.network, self.public_ca.cert_pem.bytes(),
                listen_address=proxy_listen, egress_address=proxy_egress,
                auth=self.settings.proxy_auth, mitm_ca=self.settings.mitm_ca))
            await self.proxy.start()
            self._stack.append(("proxy", self.proxy.stop))
            self.network.add(PROXY_HOST, PROXY_PORT, self.proxy.endpoint, "proxy")
            self.proxy.publish_table()

        kubelet = KubeletSettings(api_url=self.control_plane.internal_url,
                                  token=self.control_plane.node_token, ca_pem=self.control_plane.ca_pem,
                                  lease_interval=self.settings.heartbeat,
                                  status_interval=self.settings.heartbeat * 5,
                                  lease_duration=int(max(self.settings.node_grace, 1)))
        self.fleet = Fleet(FleetSettings(
            nodes=self.settings.nodes, state_dir=self.state_dir / "fleet",
            shutdown_delay=self.settings.shutdown_delay, reboot_duration=self.settings.reboot_duration,
            restart_reads_current_environment=self.settings.restart_reads_current_environment,
            public_roots=[Certificate.from_pem(self.public_ca.cert_pem.bytes())],
            lab_network=self.network, kubelet=kubelet))
        await self.fleet.start()
        self._stack.append(("fleet", self.fleet.stop))

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

    # --- conveniences ---------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        assert self.control_plane is not None
        return self.control_plane.kubeconfig_path

    def api(self) -> client.ApiClient:
        """A ``kubernetes`` client for the lab (call it from a thread: it blocks)."""
        if self._api is None:
            self._api = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        return self._api

    @property
    def proxy_url(self) -> str:
        """The proxy URL a cluster admin would put in Proxy.spec (virtual name, credentials)."""
        credentials = f"{self.settings.proxy_auth}@" if self.settings.proxy_auth else ""
        return f"http://{credentials}{PROXY_HOST}:{PROXY_PORT}"

    @property
    def mitm_ca_pem(self) -> bytes:
        assert self.proxy is not None
        return self.proxy.mitm_ca_pem

    async def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking ``kubernetes`` client call without stalling the lab's event loop."""
        return await asyncio.to_thread(function, *args, **kwargs)

