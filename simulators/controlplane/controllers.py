"""Controllers inside the embedded control plane: the cluster-network-operator's proxy and
trusted-CA handling, and the node lifecycle controller that marks silent nodes NotReady.

They are level-triggered: any relevant change wakes one reconcile that recomputes everything
and writes only what differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import re
import ssl
import time
from collections.abc import Callable
from typing import Any

import yaml

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.certificates import pem_blocks
from proxyfleet.core.contract import (
    BUNDLE_KEY,
    INJECT_LABEL,
    OPENSHIFT_CONFIG,
    OPENSHIFT_CONFIG_MANAGED,
    TRUSTED_BUNDLE_NAME,
)
from proxyfleet.core.looplag import process_monitor
from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.openshift import (
    ClusterNetworking,
    ProxyConfigError,
    TrustBundleError,
    compute_status,
    merge_bundles,
    validate_proxy_spec,
)
from proxyfleet.simulators.controlplane.resources import (
    CLUSTER_OPERATORS,
    CONFIGMAPS,
    EVENTS,
    INFRASTRUCTURES,
    LEASES,
    NETWORKS,
    NODES,
    PROXIES,
)
from proxyfleet.simulators.controlplane.store import Store, now_rfc3339
from proxyfleet.simulators.controlplane.watching import WatchingController
from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
from proxyfleet.simulators.network import LabNetwork


def set_condition(conditions: list[dict[str, Any]], kind: str, status: str, reason: str,
                  message: str, now: str) -> list[dict[str, Any]]:
    """Replace one condition; lastTransitionTime moves only when the status changes, and a
    lastHeartbeatTime is kept (only the condition's own reporter, a kubelet, moves it)."""
    updated = []
    found = False
    for condition in conditions:
        if condition.get("type") == kind:
            found = True
            same = condition.get("status") == status
            transition = condition.get("lastTransitionTime", now) if same else now
            heartbeat = {key: condition[key] for key in ("lastHeartbeatTime",) if key in condition}
            condition = {"type": kind, "status": status, "reason": reason, "message": message,
                         **heartbeat, "lastTransitionTime": transition}
        updated.append(condition)
    if not found:
        updated.append({"type": kind, "status": status, "reason": reason, "message": message,
                        "lastTransitionTime": now})
    return updated


class ProxyConfigController(WatchingController):
    """CNO's proxyconfig controller and configmap CA injector."""

    name = "proxy controller"
    watches = (PROXIES, NETWORKS, INFRASTRUCTURES, CONFIGMAPS)

    def __init__(self, store: Store, system_bundle_pem: str, network: LabNetwork | None,
                 probe_source: str = "127.50.0.1") -> None:
        super().__init__(store)
        self.system_bundle_pem = system_bundle_pem
        self.network = network
        self.probe_source = probe_source
        self._probe_cache: dict[str, str | None] = {}
        self._warned: set[str] = set()
        self.reconciles = 0

    async def reconcile_pass(self) -> None:
        await self.reconcile()

    def networking(self) -> ClusterNetworking:
        network = self.store.peek(NETWORKS, "", "cluster") or {}
        infrastructure = self.store.peek(INFRASTRUCTURES, "", "cluster") or {}
        install = self.store.peek(CONFIGMAPS, "kube-system", "cluster-config-v1") or {}
        machine: list[str] = []
        with contextlib.suppress(yaml.YAMLError, TypeError, AttributeError):
            config = yaml.safe_load((install.get("data") or {}).get("install-config", "")) or {}
            machine = [str(m["cidr"]) for m in (config.get("networking") or {}).get("machineNetwork") or []]
        status = network.get("status") or {}
        infra_status = infrastructure.get("status") or {}
        platform_status = infra_status.get("platformStatus") or {}
        platform = platform_status.get("type", "None")
        region = (platform_status.get(str(platform).lower()) or {}).get("region", "")
        return ClusterNetworking(
            machine_networks=tuple(machine),
            service_networks=tuple(status.get("serviceNetwork") or []),
            cluster_networks=tuple(n["cidr"] for n in status.get("clusterNetwork") or [] if "cidr" in n),
            api_internal_url=infra_status.get("apiServerInternalURL", ""),
            platform=str(platform), region=str(region))

    async def _probe(self, spec: dict[str, Any], bundle_pem: str) -> str | None:
        endpoints = spec.get("readinessEndpoints") or []
        if not endpoints:
            return None
        key = hashlib.sha256(repr((spec, bundle_pem)).encode()).hexdigest()
        if key in self._probe_cache:
            return self._probe_cache[key]
        trust = trust_context(pem_blocks(bundle_pem.encode()))
        failure = None
        async with EgressSession(self.network, self.probe_source, trust,
                                 user_agent="cluster-network-operator") as session:
            for endpoint in endpoints:
                proxy = spec.get("httpsProxy") if endpoint.startswith("https:") else spec.get("httpProxy")
                try:
                    response = await session.request("GET", endpoint, proxy=proxy or None)
                    if response.status >= 400:
                        raise EgressError("status", f"{response.status} {response.reason}")
                except (EgressError, ssl.SSLError, OSError) as exc:
                    failure = f"readinessEndpoint probe failed for endpoint '{endpoint}': {exc}"
                    break
        self._probe_cache[key] = failure
        return failure

    async def reconcile(self) -> None:
        self.reconciles += 1
        proxy = self.store.peek(PROXIES, "", "cluster")
        if proxy is None:
            return
        spec = proxy.get("spec") or {}
        now = now_rfc3339()
        try:
            validate_proxy_spec(spec)
            user_pem = self._user_bundle(spec)
            merged = merge_bundles(user_pem, self.system_bundle_pem)
            failure = await self._probe(spec, merged.pem)
            if failure:
                raise ProxyConfigError(failure)
        except (ProxyConfigError, TrustBundleError) as exc:
            self._degraded(True, "InvalidProxyConfig",
                           f"The proxy configuration is invalid ({exc}). Use 'oc edit "
                           "proxy.config.openshift.io cluster' to fix.", now)
            return
        status = compute_status(spec, self.networking())
        if (proxy.get("status") or {}) != status:
            current = self.store.get(PROXIES, "", "cluster")
            current["status"] = status
            self.store.update(PROXIES, "", "cluster", current, subresource="status")
        self._degraded(False, "AsExpected", "", now)
        self._publish(merged.pem, merged.warnings)

    def _user_bundle(self, spec: dict[str, Any]) -> str | None:
        name = (spec.get("trustedCA") or {}).get("name") or ""
        if not name:
            return None
        configmap = self.store.peek(CONFIGMAPS, OPENSHIFT_CONFIG, name)
        if configmap is None:
            raise TrustBundleError("failed to get trustedCA configmap for proxy cluster: "
                                   f'configmaps "{name}" not found')
        bundle = (configmap.get("data") or {}).get(BUNDLE_KEY)
        if not bundle:
            raise TrustBundleError(f"ConfigMap '{OPENSHIFT_CONFIG}/{name}' has no '{BUNDLE_KEY}' key")
        return str(bundle)

    def _degraded(self, degraded: bool, reason: str, message: str, now: str) -> None:
        operator = self.store.peek(CLUSTER_OPERATORS, "", "network")
        if operator is None:
            operator = self.store.create(CLUSTER_OPERATORS, {"metadata": {"name": "network"}, "spec": {}})
        conditions = list((operator.get("status") or {}).get("conditions") or [])
        conditions = set_condition(conditions, "Degraded", "True" if degraded else "False", reason,
                                   message, now)
        conditions = set_condition(conditions, "Available", "True", "AsExpected", "", now)
        conditions = set_condition(conditions, "Progressing", "False", "AsExpected", "", now)
        status = {**(operator.get("status") or {}), "conditions": conditions,
                  "versions": [{"name": "operator", "version": "4.16.0"}]}
        if status != operator.get("status"):
            current = self.store.get(CLUSTER_OPERATORS, "", "network")
            current["status"] = status
            self.store.update(CLUSTER_OPERATORS, "", "network", current, subresource="status")

    def _publish(self, bundle: str, warnings: tuple[str, ...]) -> None:
        self._put_bundle(OPENSHIFT_CONFIG_MANAGED, TRUSTED_BUNDLE_NAME, bundle, create=True)
        def labelled(obj: dict[str, Any]) -> bool:
            return (obj["metadata"].get("labels") or {}).get(INJECT_LABEL) == "true"

        for configmap in self.store.list(CONFIGMAPS, None, labelled):
            self._put_bundle(configmap["metadata"]["namespace"], configmap["metadata"]["name"], bundle,
                             create=False)
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                self._event(OPENSHIFT_CONFIG, "NonCACertificate", warning)

    def _put_bundle(self, namespace: str, name: str, bundle: str, create: bool) -> None:
        existing = self.store.peek(CONFIGMAPS, namespace, name)
        if existing is None:
            if create:
                self.store.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": namespace},
                                               "data": {BUNDLE_KEY: bundle}})
            return
        if (existing.get("data") or {}).get(BUNDLE_KEY) == bundle:
            return
        current = self.store.get(CONFIGMAPS, namespace, name)
        current.setdefault("data", {})[BUNDLE_KEY] = bundle
        with contextlib.suppress(APIError):
            self.store.update(CONFIGMAPS, namespace, name, current)

    def _event(self, namespace: str, reason: str, message: str) -> None:
        stamp = now_rfc3339()
        name = f"proxy-cluster.{hashlib.sha1(message.encode()).hexdigest()[:12]}"
        with contextlib.suppress(APIError):
            self.store.create(EVENTS, {
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {"kind": "Proxy", "name": "cluster",
                                   "apiVersion": "config.openshift.io/v1"},
                "reason": reason, "message": message, "type": "Warning", "count": 1,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "source": {"component": "cluster-network-operator"}})


# A Kubernetes Time ("2026-11-25T12:00:00Z") or MicroTime ("2026-11-25T12:00:00.000000Z").
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def parse_time(text: str | None) -> dt.datetime | None:
    """A Kubernetes timestamp as an aware UTC time; None if absent or not one. (``fromisoformat``
    once the shape is checked: the lifecycle controller parses two per Node every half second,
    and ``strptime`` was most of its time at 1,000 nodes.)"""
    if not text or not _TIMESTAMP.fullmatch(text):
        return None
    try:
        return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.UTC)
    except ValueError:  # the right shape, not a real date (month 13)
        return None


def last_heard(node: dict[str, Any], lease: dict[str, Any] | None) -> dt.datetime | None:
    """When the node's kubelet was last heard from, as the real node lifecycle controller counts
    it (tryUpdateNodeHealth): its Lease renewed, or its Ready condition's lastHeartbeatTime moved
    (a status the kubelet posted; the controller's own Unknown write keeps that time). Neither
    yet: the Node's creation."""
    ready: dict[str, Any] = next((c for c in node.get("status", {}).get("conditions", []) or []
                                  if c.get("type") == "Ready"), {})
    heard = [moment for moment in (parse_time((lease or {}).get("spec", {}).get("renewTime")),
                                   parse_time(ready.get("lastHeartbeatTime"))) if moment is not None]
    return max(heard) if heard else parse_time(node["metadata"].get("creationTimestamp"))


def stale_nodes(nodes: list[dict[str, Any]], leases: dict[str, dict[str, Any]], now: dt.datetime,
                grace: float, stalled: Callable[[float], float] = lambda ago: 0.0) -> list[str]:
    """Nodes whose kubelet has not been heard from (``last_heard``) within ``grace`` seconds and
    still show Ready. ``stalled(seconds_ago)`` is how long the lab's own event loop could not run
    since then: the kubelets share it, so a lease renewed late because the lab was starved is not a
    kubelet's silence (its grace is extended by that much)."""
    stale = []
    for node in nodes:
        name = node["metadata"]["name"]
        renewed = last_heard(node, leases.get(name))
        ready: dict[str, Any] = next((c for c in node.get("status", {}).get("conditions", []) or []
                                      if c.get("type") == "Ready"), {})
        ago = (now - renewed).total_seconds() if renewed is not None else 0.0
        silent = renewed is not None and ago > grace and ago > grace + stalled(ago)
        if silent and ready.get("status") != "Unknown":
            stale.append(name)
    return stale


class NodeLifecycleController:
    """Marks a node Ready=Unknown when its kubelet stops renewing its lease."""

    def __init__(self, store: Store, grace: float = 40.0, period: float = 5.0,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
                 stalled: Callable[[float], float] | None = None) -> None:
        """``stalled(seconds_ago)``: the lab's measured starvation since then (default: the running
        loop's ``process_monitor``, from ``start``)."""
        self.store = store
        self.grace = grace
        self.period = period
        self.clock = clock
        self.stalled = stalled
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.stalled is None:
            monitor = process_monitor()
            self.stalled = lambda ago: monitor.stalled(time.monotonic() - ago)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="node lifecycle controller")

    async def stop(self) -> None:
        await stop_task(self._task)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period)  # the controller's own monitoring period
            self.check()

    def check(self) -> list[str]:
        now = self.clock()
        # The stored objects themselves (read only): copying every Node and Lease each period was
        # a tenth of a 1,000-node lab's CPU.
        leases = {lease["metadata"]["name"]: lease for lease in self.store.scan(LEASES, "kube-node-lease")}
        marked = stale_nodes(self.store.scan(NODES), leases, now, self.grace, self.stalled or (lambda ago: 0.0))
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        for name in marked:
            node = self.store.get(NODES, "", name)
            conditions = node.setdefault("status", {}).get("conditions") or []
            node["status"]["conditions"] = set_condition(
                conditions, "Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.",
                stamp)
            with contextlib.suppress(APIError):
                self.store.update(NODES, "", name, node, subresource="status")
        return marked
