"""What the reconciler watches, on the shared informer (``proxyfleet.core.informer``): the
Proxy, the operator namespace's ConfigMaps and Secrets, and Nodes (indexed by InternalIP)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubernetes import client

from proxyfleet.core.contract import CONFIG_GROUP, CONFIG_VERSION, PROXIES, PROXY_NAME
from proxyfleet.core.informer import Informer, by_internal_ip, internal_ip
from proxyfleet.harness.reconciler.reporting import REBOOT_PENDING

ADDRESS = "address"
OWES_REBOOT = "owes-reboot"  # Nodes recording a reboot asked for and not yet verified, by address


def owes_reboot(node: dict[str, Any]) -> list[str]:
    """The Node's address if it records a reboot asked for and not verified (``REBOOT_PENDING``)."""
    if REBOOT_PENDING not in ((node.get("metadata") or {}).get("annotations") or {}):
        return []
    address = internal_ip(node)
    return [address] if address is not None else []
Change = Callable[[str, str, dict[str, Any]], None]  # (resource, event, object)


class ClusterWatch:
    """Four informers, one handler; ``synced`` is set once each has listed."""

    def __init__(self, api: client.ApiClient, namespace: str, on_change: Change) -> None:
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        self.on_change = on_change
        self.proxies = self._informer(api, "proxies", custom.list_cluster_custom_object,
                                      CONFIG_GROUP, CONFIG_VERSION, PROXIES)
        self.configmaps = self._informer(api, "configmaps", core.list_namespaced_config_map, namespace)
        self.secrets = self._informer(api, "secrets", core.list_namespaced_secret, namespace)
        # The reboot slots' count asks which Nodes owe a reboot every time a waiting node looks
        # (hundreds of waiters at 1,000 nodes): an index answers with the few, not the fleet.
        self.nodes = self._informer(api, "nodes", core.list_node,
                                    indexers={ADDRESS: by_internal_ip, OWES_REBOOT: owes_reboot})
        self.synced = asyncio.Event()

    def _informer(self, api: client.ApiClient, kind: str, lister: Callable[..., Any], *args: Any,
                  indexers: dict[str, Callable[[dict[str, Any]], list[str]]] | None = None) -> Informer:
        return Informer(api, lister, *args, name=kind, indexers=indexers,
                        handler=lambda event, obj: self._changed(kind, event, obj))

    @property
    def informers(self) -> tuple[Informer, ...]:
        return self.proxies, self.configmaps, self.secrets, self.nodes

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def join(self, timeout: float) -> bool:
        """Wait (blocking) for every informer's thread to end after ``stop``."""
        return all([informer.join(timeout) for informer in self.informers])

    @property
    def relists(self) -> int:
        return sum(i.relists for i in self.informers)

    def _changed(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        if not self.synced.is_set() and all(i.synced.is_set() for i in self.informers):
            self.synced.set()
        self.on_change(kind, event, obj)

    @property
    def proxy(self) -> dict[str, Any] | None:
        return self.proxies.get(PROXY_NAME)

    def node_by_address(self, address: str) -> dict[str, Any] | None:
        return self.nodes.first(ADDRESS, address)
