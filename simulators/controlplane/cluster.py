"""The embedded control plane: API server over HTTPS with its own CA, the OpenShift controllers,
the objects an installer creates, and a kubeconfig for kubectl and the ``kubernetes`` client."""

from __future__ import annotations

import base64
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
import yaml
from aiohttp import web

from proxyfleet.core.secretfiles import write_private
from proxyfleet.simulators.controlplane.authorization import ADMIN, NodeTokens, bootstrap_identity, new_bootstrap_token
from proxyfleet.simulators.controlplane.controllers import NodeLifecycleController, ProxyConfigController
from proxyfleet.simulators.controlplane.cordonledger import CordonLedger
from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.install import InstallPlan, load_install_config, plan
from proxyfleet.simulators.controlplane.resources import NODES, PODS, RESOURCE_TYPES
from proxyfleet.simulators.controlplane.server import APIServer
from proxyfleet.simulators.controlplane.store import Store
from proxyfleet.simulators.controlplane.termination import terminating
from proxyfleet.simulators.controlplane.workloads import WorkloadControllers, evictable, lab_workloads
from proxyfleet.simulators.network import CONTROL_PLANE_NETWORK, Endpoint, LabNetwork

API_PORT = 6443
# Beside the kubeconfig: whoever simulates the nodes (proxyfleet fleet) derives each kubelet's
# own token from it. Real nodes get client certificates by TLS bootstrapping instead.
NODE_CREDENTIALS = "node-credentials.key"


@dataclass
class ControlPlaneSettings:
    state_dir: Path
    system_bundle_pem: str
    install_config: str | None = None  # YAML text; None: the lab's default cluster
    network: LabNetwork | None = None
    address: str = ""
    port: int = 0
    node_grace: float = 40.0
    node_monitor_period: float = 5.0
    bookmark_interval: float = 30.0
    # Pods of the lab's ReplicaSet (one per node when equal to the node count; 0: no workloads)
    workload_replicas: int = 0


class ControlPlane:
    def __init__(self, settings: ControlPlaneSettings) -> None:
        self.settings = settings
        self.plan: InstallPlan = plan(load_install_config(settings.install_config))
        self.network = settings.network
        self.address = settings.address or (
            settings.network.allocate(CONTROL_PLANE_NETWORK) if settings.network else "127.50.0.1")
        self.port = settings.port
        self.ca = trustme.CA(organization_name="proxyfleet cluster CA")
        self.admin_token = secrets.token_urlsafe(24)
        # Each kubelet gets its own identity (system:node:<name>) from this key; the bootstrap
        # token is what a joining machine holds before it has one, and may read nothing here.
        self.node_tokens = NodeTokens()
        bootstrap_id, self.bootstrap_token = new_bootstrap_token()
        self.store = Store()
        self.cordons = CordonLedger()  # lab evidence: each Node's cordon changes as committed
        self.store.observers.append(self.cordons.observe)
        self.server = APIServer(self.store, {self.admin_token: ADMIN,
                                             self.bootstrap_token: bootstrap_identity(bootstrap_id)},
                                bookmark_interval=settings.bookmark_interval, node_tokens=self.node_tokens)
        self.proxy_controller = ProxyConfigController(self.store, settings.system_bundle_pem,
                                                      settings.network, self.address)
        self.node_controller = NodeLifecycleController(self.store, settings.node_grace,
                                                       settings.node_monitor_period)
        self.workloads = WorkloadControllers(self.store)
        self._runner: web.AppRunner | None = None
        self._ssl_context: ssl.SSLContext | None = None

    def node_unschedulable(self, name: str) -> bool | None:
        """Whether Node ``name`` is cordoned right now (None: no such Node). Lab evidence, read
        from the store directly so it is exact at the instant it is asked."""
        try:
            node = self.store.get(NODES, "", name)
        except APIError:
            return None
        return bool((node.get("spec") or {}).get("unschedulable"))

    def pods_to_drain(self, name: str) -> tuple[str, ...]:
        """The pods a drain must move (not a DaemonSet's) bound to Node ``name`` right now — a
        Terminating one too: evicted is not gone (``kubectl drain`` waits for the deletion). Lab
        evidence, read from the store so it is exact at the instant it is asked."""
        return tuple(f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                     + (" (Terminating: evicted, not yet gone)" if terminating(p) else "")
                     for p in self.store.list(PODS, None, lambda p: (p.get("spec") or {}).get("nodeName") == name,
                                              {"spec.nodeName": name})
                     if evictable(p))

    def kubelet_token(self, node_name: str) -> str:
        """The bearer token the kubelet of ``node_name`` authenticates with (system:node:<name>)."""
        return self.node_tokens.token(node_name)

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}"

    @property
    def internal_url(self) -> str:
        """The URL nodes use: a virtual name the lab table maps to this server."""
        return f"https://{self.plan.api_internal_host}:{API_PORT}"

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem.bytes()

    @property
    def kubeconfig_path(self) -> Path:
        return self.settings.state_dir / "kubeconfig"

    @property
    def node_credentials_path(self) -> Path:
        """The key kubelet tokens derive from (``NODE_CREDENTIALS`` beside the kubeconfig)."""
        return self.settings.state_dir / NODE_CREDENTIALS

    def _install(self) -> None:
        by_key = {f"{t.group}/{t.plural}": t for t in RESOURCE_TYPES}
        for key, obj in self.plan.objects:
            self.store.create(by_key[key], obj)
        if self.settings.workload_replicas:
            for resource_type, obj in lab_workloads(self.settings.workload_replicas):
                self.store.create(resource_type, obj)

    async def start(self) -> None:
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        self._install()
        certificate = self.ca.issue_cert(self.address, "localhost", "127.0.0.1",
                                         self.plan.api_host, self.plan.api_internal_host,
                                         "kubernetes.default.svc")
        self._ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        certificate.configure_cert(self._ssl_context)
        await self._serve()
        if self.network is not None:
            for host in (self.plan.api_internal_host, self.plan.api_host):
                self.network.add(host, API_PORT, Endpoint(self.address, self.port), "control-plane")
        self.proxy_controller.start()
        self.node_controller.start()
        if self.settings.workload_replicas:
            self.workloads.start()
        self.write_kubeconfig()

    async def _serve(self) -> None:
        self._runner = web.AppRunner(self.server.application(), access_log=None, handle_signals=False,
                                     shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, ssl_context=self._ssl_context)
        await site.start()
        server = site._server  # the bound socket tells the port chosen
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def restart(self) -> None:
        """Restart the API server on the same address: every open connection and watch is cut,
        and the history is compacted (as after an etcd compaction), so a client that resumes a
        watch from its last resourceVersion gets 410 Gone and must list again. The objects stay."""
        await self.server.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()
        self.store.compact()
        await self._serve()

    async def stop(self) -> None:
        await self.proxy_controller.stop()
        await self.node_controller.stop()
        await self.workloads.stop()
        await self.server.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ControlPlane:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def kubeconfig(self, token: str | None = None, server: str | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": self.plan.cluster_domain, "cluster": {
                "server": server or self.url,
                "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": "admin", "user": {"token": token or self.admin_token}}],
            "contexts": [{"name": "admin", "context": {"cluster": self.plan.cluster_domain,
                                                       "user": "admin"}}],
            "current-context": "admin",
        }

    def write_kubeconfig(self) -> Path:
        write_private(self.node_credentials_path, self.node_tokens.key.hex() + "\n")
        return write_private(self.kubeconfig_path, yaml.safe_dump(self.kubeconfig(), sort_keys=False))
