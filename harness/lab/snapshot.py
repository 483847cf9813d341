"""The cluster objects a conformance run changes, saved before it and put back after it: the
Proxy's spec, the trusted CA ConfigMaps (the one the Proxy names and the ones the run writes),
``windows-instances``, the operator's ``trusted-ca`` ConfigMap's existence and labels (the drift
workflow deletes it and removes its injection label) and the maintenance cordons the run sets on
Nodes. A run against a real
cluster must leave it as it found it, also when it fails or is stopped; an object that did not
exist before is deleted again.

The operator's ``trusted-ca`` is the operator's and the network operator's (which injects the
bundle): it is only created again, with its labels and no data, or given back a label it lost —
never deleted, and its data never overwritten.

A cordon is put back only where the run set it (``record_run_cordon``, written to the file before
the cordon is): a Node cordoned now may be one the cluster's reconciler is rebooting.

The snapshot can be kept in a file (``write``; owner-only, since a Proxy spec may carry proxy
credentials) so a run killed outright can still be undone (``proxyfleet restore``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import INSTANCES, OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, PROXY, TRUSTED_CA
from proxyfleet.core.secretfiles import write_private

FORMAT = "proxyfleet-cluster-snapshot/v1"
# What a ConfigMap is restored with (the server owns the rest: uid, resourceVersion, timestamps).
_CONFIGMAP_FIELDS = ("data", "binaryData")
_METADATA_FIELDS = ("labels", "annotations")


class SnapshotError(RuntimeError):
    """The snapshot cannot be taken, read or put back."""


async def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(function, *args, **kwargs)


@dataclass
class ClusterSnapshot:
    """The Proxy's spec and the ConfigMaps as they were (None: the ConfigMap did not exist), the
    operator's ``trusted-ca`` labels (None: it did not exist), each Node's cordon as it was, and
    the Nodes the run has cordoned since."""

    proxy_spec: dict[str, Any]
    configmaps: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)
    trusted_ca_labels: dict[str, str] | None = None
    node_cordons: dict[str, bool] = field(default_factory=dict)  # Node name -> unschedulable
    run_cordons: list[str] = field(default_factory=list)

    @classmethod
    async def take(cls, api: client.ApiClient, trusted_ca_names: Iterable[str] = ()) -> ClusterSnapshot:
        """Read the Proxy, the trusted CA ConfigMaps (the Proxy's own and ``trusted_ca_names``, in
        openshift-config) and ``windows-instances``."""
        try:
            proxy = await _call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
        except ApiException as exc:
            raise SnapshotError(f"cannot read Proxy/cluster ({exc.status} {exc.reason})") from None
        spec = dict(proxy.get("spec") or {})
        names = {str((spec.get("trustedCA") or {}).get("name") or ""), *trusted_ca_names} - {""}
        keys = [(OPENSHIFT_CONFIG, name) for name in sorted(names)] + [(OPERATOR_NAMESPACE, INSTANCES)]
        snapshot = cls(proxy_spec=spec)
        core = client.CoreV1Api(api)
        for namespace, name in keys:
            snapshot.configmaps[(namespace, name)] = await _read_configmap(core, api, namespace, name)
        trusted_ca = await _read_configmap(core, api, OPERATOR_NAMESPACE, TRUSTED_CA)
        if trusted_ca is not None:
            snapshot.trusted_ca_labels = dict(trusted_ca["metadata"].get("labels") or {})
        try:
            nodes = await _call(core.list_node)
        except ApiException as exc:
            raise SnapshotError(f"cannot list Nodes ({exc.status} {exc.reason})") from None
        snapshot.node_cordons = {n.metadata.name: bool(n.spec and n.spec.unschedulable) for n in nodes.items}
        return snapshot

    async def restore(self, api: client.ApiClient) -> list[str]:
        """Put every saved object back as it was; returns what was done, one line each."""
        done = []
        custom = client.CustomObjectsApi(api)
        try:
            current = await _call(custom.get_cluster_custom_object, *PROXY)
            if (current.get("spec") or {}) != self.proxy_spec:
                current["spec"] = self.proxy_spec
                await _call(custom.replace_cluster_custom_object, *PROXY, current)
                done.append("Proxy/cluster spec restored")
        except ApiException as exc:
            raise SnapshotError(f"cannot restore Proxy/cluster ({exc.status} {exc.reason})") from None
        core = client.CoreV1Api(api)
        for (namespace, name), saved in self.configmaps.items():
            done += await _restore_configmap(core, api, namespace, name, saved)
        if self.trusted_ca_labels is not None:
            done += await _restore_trusted_ca(core, api, self.trusted_ca_labels)
        for name in self.run_cordons:
            done += await _restore_cordon(core, name, self.node_cordons.get(name))
        return done

    @classmethod
    def record_run_cordon(cls, path: Path, node: str, cordoned: bool) -> None:
        """Note in the snapshot file that the run cordons ``node`` (before it does), or that it
        has uncordoned it again (after). A Node schedulable when the snapshot was taken is the
        only kind the run cordons."""
        snapshot = cls.read(path)
        if cordoned and node not in snapshot.run_cordons:
            if snapshot.node_cordons.get(node) is not False:
                raise SnapshotError(f"Node {node} was not schedulable when the run began: not the run's to cordon")
            snapshot.run_cordons.append(node)
        elif not cordoned and node in snapshot.run_cordons:
            snapshot.run_cordons.remove(node)
        snapshot.write(path)

    # --- a file, for a run killed outright -------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "proxy_spec": self.proxy_spec,
                "configmaps": [{"namespace": ns, "name": name, "saved": saved}
                               for (ns, name), saved in self.configmaps.items()],
                "trusted_ca_labels": self.trusted_ca_labels,
                "node_cordons": self.node_cordons, "run_cordons": self.run_cordons}

    def write(self, path: Path) -> Path:
        """Keep the snapshot in ``path``, readable by its owner only (a spec may hold credentials)."""
        write_private(path, json.dumps(self.to_json(), indent=1))
        return path

    @classmethod
    def read(cls, path: Path) -> ClusterSnapshot:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"cannot read the snapshot {path}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SnapshotError(f"{path} is not a proxyfleet cluster snapshot ({FORMAT})")
        return cls(proxy_spec=dict(data.get("proxy_spec") or {}),
                   configmaps={(str(c["namespace"]), str(c["name"])): c.get("saved")
                               for c in data.get("configmaps") or []},
                   trusted_ca_labels=({str(k): str(v) for k, v in data["trusted_ca_labels"].items()}
                                      if isinstance(data.get("trusted_ca_labels"), dict) else None),
                   node_cordons={str(n): bool(v) for n, v in (data.get("node_cordons") or {}).items()},
                   run_cordons=[str(n) for n in data.get("run_cordons") or []])


async def _read_configmap(core: client.CoreV1Api, api: client.ApiClient, namespace: str,
                          name: str) -> dict[str, Any] | None:
    try:
        found = await _call(core.read_namespaced_config_map, name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise SnapshotError(f"cannot read ConfigMap {namespace}/{name} ({exc.status} {exc.reason})") from None
    body: dict[str, Any] = api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
    metadata = body.get("metadata") or {}
    kept = {k: body[k] for k in _CONFIGMAP_FIELDS if body.get(k) is not None}
    kept["metadata"] = {k: metadata[k] for k in _METADATA_FIELDS if metadata.get(k)}
    return kept


async def _restore_configmap(core: client.CoreV1Api, api: client.ApiClient, namespace: str, name: str,
                             saved: dict[str, Any] | None) -> list[str]:
    current = await _read_configmap(core, api, namespace, name)
    if current == saved:
        return []
    where = f"ConfigMap {namespace}/{name}"
    try:
        if saved is None:
            await _call(core.delete_namespaced_config_map, name, namespace)
            return [f"{where} deleted (the run created it)"]
        body = {**saved, "metadata": {**saved.get("metadata", {}), "name": name, "namespace": namespace}}
        if current is None:
            await _call(core.create_namespaced_config_map, namespace, body)
            return [f"{where} created again (the run deleted it)"]
        await _call(core.replace_namespaced_config_map, name, namespace, body)
        return [f"{where} restored"]
    except ApiException as exc:
        if exc.status == 404 and saved is None:
            return []
        raise SnapshotError(f"cannot restore {where} ({exc.status} {exc.reason})") from None


async def _restore_trusted_ca(core: client.CoreV1Api, api: client.ApiClient, labels: dict[str, str]) -> list[str]:
    """Create the operator's ``trusted-ca`` again (labels only: the bundle is injected) if the run
    left it deleted, or give it back the labels it lost; its data is never touched."""
    where = f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA}"
    current = await _read_configmap(core, api, OPERATOR_NAMESPACE, TRUSTED_CA)
    try:
        if current is None:
            await _call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
                        {"metadata": {"name": TRUSTED_CA, "namespace": OPERATOR_NAMESPACE, "labels": labels}})
            return [f"{where} created again with its labels (the bundle is injected)"]
        lost = {k: v for k, v in labels.items() if (current["metadata"].get("labels") or {}).get(k) != v}
        if not lost:
            return []
        await _call(core.patch_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE, {"metadata": {"labels": lost}})
    except ApiException as exc:
        if exc.status == 409:  # the operator re-created it meanwhile: it is back
            return []
        raise SnapshotError(f"cannot restore {where} ({exc.status} {exc.reason})") from None
    return [f"{where} labels restored: {', '.join(sorted(lost))}"]


async def _restore_cordon(core: client.CoreV1Api, name: str, was_cordoned: bool | None) -> list[str]:
    """Uncordon a Node the run cordoned, if it was schedulable before the run and is cordoned now."""
    if was_cordoned is not False:
        return []
    try:
        node = await _call(core.read_node, name)
        if not (node.spec and node.spec.unschedulable):
            return []
        await _call(core.patch_node, name, {"spec": {"unschedulable": False}})
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise SnapshotError(f"cannot uncordon Node {name} ({exc.status} {exc.reason})") from None
    return [f"Node {name} uncordoned (the run's maintenance cordon)"]
