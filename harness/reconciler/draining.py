"""Draining a cordoned node before its reboot, as ``kubectl drain --ignore-daemonsets`` does:
every pod bound to it, except DaemonSet pods, mirror pods and finished ones, is evicted through the
Eviction API, which honours PodDisruptionBudgets; an eviction refused (429) is retried until the
budget allows it or the drain times out. The node is not rebooted until its pods are gone — evicted
is not gone: an evicted pod stays bound, Terminating, until its containers have stopped."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.apijson import raw_json
from proxyfleet.core.nodessh import NodeError

DELETION_POLL = 1.0  # seconds between looks at a pod that is terminating


class DrainTimeout(NodeError):
    """Pods were still bound to the node when the drain's deadline passed (the node stays
    cordoned and is not rebooted; the next pass drains again)."""

    reason = "DrainTimeout"


@dataclass
class DrainSettings:
    timeout: float = 600.0
    retry: float = 5.0  # kubectl drain waits 5 s between refused evictions


def must_move(pod: dict[str, Any]) -> bool:
    """Whether a drain moves this pod (kubectl drain's filters with --ignore-daemonsets)."""
    metadata = pod.get("metadata") or {}
    owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller")]
    if any(o.get("kind") == "DaemonSet" for o in owners):
        return False
    if "kubernetes.io/config.mirror" in (metadata.get("annotations") or {}):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class NodeDrainer:
    def __init__(self, api: client.ApiClient, settings: DrainSettings | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.settings = settings or DrainSettings()
        self.evictions = 0
        self.refusals = 0

    async def pods_on(self, node_name: str) -> list[dict[str, Any]]:
        listed = await asyncio.to_thread(raw_json, self.core.list_pod_for_all_namespaces,
                                         field_selector=f"spec.nodeName={node_name}")
        pods: list[dict[str, Any]] = listed.get("items") or []
        return [pod for pod in pods if must_move(pod)]

    async def remove(self, pod: dict[str, Any]) -> bool:
        """Ask for one pod to go; True when it is gone or going, False when its budget refused."""
        metadata = pod["metadata"]
        body = client.V1Eviction(api_version="policy/v1", kind="Eviction",
                                 metadata=client.V1ObjectMeta(name=metadata["name"], namespace=metadata["namespace"]))
        try:
            await asyncio.to_thread(self.core.create_namespaced_pod_eviction, metadata["name"],
                                    metadata["namespace"], body)
        except ApiException as exc:
            if exc.status == 404:
                return True
            if exc.status == 429:
                self.refusals += 1
                return False
            raise
        self.evictions += 1
        return True

    async def drain(self, node_name: str) -> int:
        """Evict until no pod that must move is bound to the node; returns how many were asked to go."""
        deadline = time.monotonic() + self.settings.timeout
        asked: set[str] = set()
        while True:
            pods = await self.pods_on(node_name)
            if not pods:
                return len(asked)
            refused = []
            for pod in pods:
                if (pod.get("metadata") or {}).get("deletionTimestamp"):
                    refused.append(pod)  # terminating: wait for it to be gone
                elif await self.remove(pod):
                    asked.add(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
                else:
                    refused.append(pod)
            if refused and time.monotonic() >= deadline:
                names = ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']} "
                                  + ("(terminating)" if (p.get("metadata") or {}).get("deletionTimestamp")
                                     else "(eviction refused)") for p in refused)
                raise DrainTimeout(f"drain of {node_name} timed out after {self.settings.timeout:g}s: "
                                   f"{names} still on the node (a PodDisruptionBudget refused its eviction, "
                                   "or its containers have not stopped yet)")
            if refused:
                # a refused eviction is asked again after ``retry``; a pod that is only terminating
                # is looked at again sooner (kubectl drain polls its deletion every second)
                terminating_only = all((p.get("metadata") or {}).get("deletionTimestamp") for p in refused)
                await asyncio.sleep(min(self.settings.retry, DELETION_POLL) if terminating_only
                                    else self.settings.retry)
