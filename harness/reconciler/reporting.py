"""What the reconciler writes back to the cluster: Events, per-node annotations and a state
label (``kubectl get nodes -L proxyfleet.io/proxy-state``), cordon/uncordon, and the trusted-ca
ConfigMap it asks the cluster to fill. Never a credential: every message is redacted."""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.apijson import raw_json
from proxyfleet.core.contract import ANNOTATION_PREFIX, INJECT_LABEL, INSTANCES, TRUSTED_CA
from proxyfleet.core.informer import internal_ip
from proxyfleet.core.noproxy import redact_text

PREFIX = ANNOTATION_PREFIX
CONFIG_HASH = PREFIX + "config-hash"
REBOOT_PENDING = PREFIX + "reboot-pending"  # the boot time the reboot was requested in
USERNAME = PREFIX + "username"
# Who cordoned a node the reconciler is rebooting: "administrator" when it was already cordoned
# (that cordon stays after the reboot), else "reconciler". Kept on the Node so a restarted
# reconciler still knows.
CORDONED_BY = PREFIX + "cordoned-by"
APPLIED_PROXY = PREFIX + "https-proxy"  # the HTTPS_PROXY last verified on the node (redacted), or "none"
COMPONENT = "proxyfleet-reconciler"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


class ClusterWriter:
    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.events_written = 0

    async def event(self, involved: dict[str, Any] | None, reason: str, message: str,
                    kind: str = "Normal") -> None:
        """An Event about a Node (or, without one, about the windows-instances ConfigMap)."""
        if involved is not None and involved.get("kind", "Node") == "Node":
            metadata = involved["metadata"]
            reference = client.V1ObjectReference(kind="Node", name=metadata["name"], uid=metadata.get("uid"),
                                                 api_version="v1")
            namespace = "default"
        else:
            reference = client.V1ObjectReference(kind="ConfigMap", name=INSTANCES,
                                                 namespace=self.namespace, api_version="v1")
            namespace = self.namespace
        stamp = _now()
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=f"{reference.name}.{secrets.token_hex(8)}", namespace=namespace),
            involved_object=reference, reason=reason, message=redact_text(message)[:1024], type=kind,
            source=client.V1EventSource(component=COMPONENT), first_timestamp=stamp, last_timestamp=stamp,
            count=1, reporting_component=COMPONENT)
        try:
            await asyncio.to_thread(self.core.create_namespaced_event, namespace, body)
            self.events_written += 1
        except ApiException:
            pass  # events are best effort, as in client-go's recorder

    async def annotate(self, node_name: str, annotations: dict[str, str | None],
                       labels: dict[str, str | None] | None = None) -> None:
        patch: dict[str, Any] = {"metadata": {"annotations": {k: (redact_text(v) if v else v)
                                                              for k, v in annotations.items()}}}
        if labels:
            patch["metadata"]["labels"] = labels
        try:
            await asyncio.to_thread(self.core.patch_node, node_name, patch)
        except ApiException as exc:
            if exc.status != 404:
                raise

    async def find_node(self, address: str) -> dict[str, Any] | None:
        """The Node whose InternalIP is ``address``, read from the API server (not a cache)."""
        listed = await asyncio.to_thread(raw_json, self.core.list_node)
        return next((node for node in listed.get("items") or [] if internal_ip(node) == address), None)

    async def cordon(self, node_name: str, unschedulable: bool) -> None:
        await asyncio.to_thread(self.core.patch_node, node_name, {"spec": {"unschedulable": unschedulable}})

    async def _fresh(self, node_name: str) -> dict[str, Any]:
        return await asyncio.to_thread(raw_json, self.core.read_node, node_name)

    async def cordon_for_reboot(self, node_name: str) -> str:
        """Cordon before a reboot, recording whether the administrator had cordoned the node
        already (read from the API server, not a cache: a stale cache would lose their cordon).
        Returns who cordoned it ("administrator" or "reconciler")."""
        node = await self._fresh(node_name)
        recorded = ((node.get("metadata") or {}).get("annotations") or {}).get(CORDONED_BY)
        if recorded:
            # an interrupted earlier pass already recorded who cordoned it
            await self.cordon(node_name, True)
            return str(recorded)
        by = "administrator" if (node.get("spec") or {}).get("unschedulable") else "reconciler"
        await asyncio.to_thread(self.core.patch_node, node_name,
                                {"metadata": {"annotations": {CORDONED_BY: by}}, "spec": {"unschedulable": True}})
        return by

    async def release_cordon(self, node_name: str, by: str | None = None) -> None:
        """After the reboot: uncordon if the reconciler cordoned the node (``by``, as
        ``cordon_for_reboot`` returned it; None: read from the Node's annotation now). Only our own
        cordon is undone: without a record (a pass resuming from a cache that had not yet seen the
        previous pass finish, which already released and forgot it) the Node is left as it is —
        uncordoning then lost an administrator's cordon at 100 nodes."""
        if by is None:
            node = await self._fresh(node_name)
            by = ((node.get("metadata") or {}).get("annotations") or {}).get(CORDONED_BY)
        patch: dict[str, Any] = {"metadata": {"annotations": {CORDONED_BY: None}}}
        if by == "reconciler":
            patch["spec"] = {"unschedulable": False}
        await asyncio.to_thread(self.core.patch_node, node_name, patch)

    async def ensure_trusted_ca(self, existing: dict[str, Any] | None) -> bool:
        """Create ``trusted-ca`` with the injection label, or restore a removed label."""
        if existing is None:
            body = client.V1ConfigMap(metadata=client.V1ObjectMeta(
                name=TRUSTED_CA, namespace=self.namespace, labels={INJECT_LABEL: "true"}))
            try:
                await asyncio.to_thread(self.core.create_namespaced_config_map, self.namespace, body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            return True
        if (existing.get("metadata", {}).get("labels") or {}).get(INJECT_LABEL) != "true":
            await asyncio.to_thread(self.core.patch_namespaced_config_map, TRUSTED_CA, self.namespace,
                                    {"metadata": {"labels": {INJECT_LABEL: "true"}}})
            return True
        return False
