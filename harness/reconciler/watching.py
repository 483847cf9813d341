"""Cluster events to reconciler wake-ups: list-then-watch of the Proxy, the operator namespace's
ConfigMaps and Secrets, and Nodes, through the official ``kubernetes`` client.

The client blocks, so each watch runs in a daemon thread and hands every change to the event
loop. A watch that ends is resumed from the last resourceVersion; ``410 Gone`` means re-list.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)
WATCH_TIMEOUT = 5  # seconds a single watch request stays open; also bounds how long stop() takes


@dataclass
class ClusterCache:
    """The latest copy of every object the reconciler reads."""

    proxies: dict[str, dict[str, Any]] = field(default_factory=dict)
    configmaps: dict[str, dict[str, Any]] = field(default_factory=dict)
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    synced: set[str] = field(default_factory=set)

    def bucket(self, kind: str) -> dict[str, dict[str, Any]]:
        return {"proxies": self.proxies, "configmaps": self.configmaps, "secrets": self.secrets,
                "nodes": self.nodes}[kind]

    @property
    def proxy(self) -> dict[str, Any] | None:
        return self.proxies.get("cluster")

    def node_by_address(self, address: str) -> dict[str, Any] | None:
        for node in self.nodes.values():
            for entry in (node.get("status") or {}).get("addresses") or []:
                if entry.get("type") == "InternalIP" and entry.get("address") == address:
                    return node
        return None


Change = Callable[[str, str, dict[str, Any]], None]


class ClusterWatch:
    def __init__(self, api: client.ApiClient, namespace: str, on_change: Change,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.api = api
        self.namespace = namespace
        self.on_change = on_change
        self.loop = loop
        self.cache = ClusterCache()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self.synced = asyncio.Event()
        self.relists = 0

    def _sources(self) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
        core = client.CoreV1Api(self.api)
        custom = client.CustomObjectsApi(self.api)
        return {
            "proxies": (custom.list_cluster_custom_object, ("config.openshift.io", "v1", "proxies")),
            "configmaps": (core.list_namespaced_config_map, (self.namespace,)),
            "secrets": (core.list_namespaced_secret, (self.namespace,)),
            "nodes": (core.list_node, ()),
        }

    def start(self) -> None:
        for kind, (function, args) in self._sources().items():
            thread = threading.Thread(target=self._follow, args=(kind, function, args),
                                      name=f"watch {kind}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopped.set()

    def _post(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        if not self._stopped.is_set():
            self.loop.call_soon_threadsafe(self._apply, kind, event, obj)

    def _apply(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        bucket = self.cache.bucket(kind)
        if event == "SYNCED":
            bucket.clear()
            for item in obj["items"]:
                bucket[item["metadata"]["name"]] = item
            self.cache.synced.add(kind)
            if len(self.cache.synced) == 4:
                self.synced.set()
            self.on_change(kind, event, obj)
            return
        name = obj["metadata"]["name"]
        if event == "DELETED":
            bucket.pop(name, None)
        else:
            bucket[name] = obj
        self.on_change(kind, event, obj)

    def _follow(self, kind: str, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        resource_version: str | None = None
        failures = 0
        while not self._stopped.is_set():
            try:
                if resource_version is None:
                    listing = function(*args)
                    data = listing if isinstance(listing, dict) else \
                        self.api.sanitize_for_serialization(listing)  # type: ignore[no-untyped-call]
                    resource_version = data["metadata"]["resourceVersion"]
                    self._post(kind, "SYNCED", {"items": data.get("items") or []})
                    self.relists += 1
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    function, *args, resource_version=resource_version, timeout_seconds=WATCH_TIMEOUT,
                    allow_watch_bookmarks=True)
                for event in stream:
                    if self._stopped.is_set():
                        break
                    obj = event["raw_object"]
                    resource_version = obj.get("metadata", {}).get("resourceVersion", resource_version)
                    if event["type"] != "BOOKMARK":
                        self._post(kind, event["type"], obj)
                failures = 0
            except ApiException as exc:
                if exc.status == 410:
                    resource_version = None  # too old: list again
                    continue
                failures += 1
                log.warning("watching %s failed (%s); retrying", kind, exc.status)
                time.sleep(min(0.2 * 2 ** failures, 5))
            except Exception as exc:  # a dropped connection: resume from the last version
                failures += 1
                log.warning("watching %s was interrupted (%s); resuming", kind, type(exc).__name__)
                time.sleep(min(0.2 * 2 ** failures, 5))
