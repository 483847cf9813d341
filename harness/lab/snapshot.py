"""The cluster objects a conformance run changes, saved before it and put back after it: the
Proxy's spec, the trusted CA ConfigMaps (the one the Proxy names and the one the run writes,
``RUN_CA``), ``windows-instances``, the operator's ``trusted-ca`` ConfigMap's existence and
labels (the drift workflow deletes it and removes its injection label) and the maintenance
cordons the run sets on Nodes. A run against a real cluster must leave it as it found it, also
when it fails or is stopped; an object that did not exist before and that the run creates is
deleted again. Putting them back is ``restoring.py``'s job.

The operator's ``trusted-ca`` is the operator's and the network operator's (which injects the
bundle): it is only created again, with its labels and no data, or given back a label it lost —
never deleted, and its data never overwritten.

A cordon is put back only where the run set it (``record_run_cordon``, written to the file before
the cordon is): a Node cordoned now may be one the cluster's reconciler is rebooting.

The snapshot is kept in a file (``write``; owner-only, since a Proxy spec may carry proxy
credentials) that names the cluster it came from (the ``kube-system`` namespace's uid, OpenShift's
cluster ID where the cluster has one, the API server's URL) and when it was taken, so a run killed
outright can be undone (``proxyfleet restore``) and a file from another cluster is refused. A file
is read strictly: an unknown key, a wrong type or an object a run never writes is one error line
before anything is touched, because ``restore`` acts on whatever the file says.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import INSTANCES, OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, PROXY, RUN_CA, TRUSTED_CA
from proxyfleet.core.secretfiles import write_private

FORMAT = "proxyfleet-cluster-snapshot/v2"
OLD_FORMAT = "proxyfleet-cluster-snapshot/v1"  # before files named their cluster
# What a ConfigMap is restored with (the server owns the rest: uid, resourceVersion, timestamps).
_CONFIGMAP_FIELDS = ("data", "binaryData")
_METADATA_FIELDS = ("labels", "annotations")
# config.openshift.io/v1 ProxySpec, all of it: a file with anything else was not written by a run.
PROXY_SPEC_FIELDS = ("httpProxy", "httpsProxy", "noProxy", "readinessEndpoints", "trustedCA")
# A Kubernetes object name (DNS-1123 subdomain).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
# Seconds each read may take when a snapshot is taken (the restore has its own bound).
REQUEST_TIMEOUT = 30


class SnapshotError(RuntimeError):
    """The snapshot cannot be taken, read or put back."""


async def call(function: Any, *args: Any, **kwargs: Any) -> Any:
    """A blocking ``kubernetes`` client call off the event loop, with a request timeout."""
    return await asyncio.to_thread(function, *args, _request_timeout=REQUEST_TIMEOUT, **kwargs)


@dataclass(frozen=True)
class ClusterIdentity:
    """Which cluster a snapshot came from. ``kube_system_uid`` is what every Kubernetes cluster
    has and never changes (the usual cluster ID); ``cluster_id`` is OpenShift's own (ClusterVersion
    ``version`` spec.clusterID, "" where the cluster serves none); ``server`` is only shown."""

    server: str
    kube_system_uid: str
    cluster_id: str = ""

    @classmethod
    async def read(cls, api: client.ApiClient) -> ClusterIdentity:
        try:
            namespace = await call(client.CoreV1Api(api).read_namespace, "kube-system")
        except ApiException as exc:
            raise SnapshotError(f"cannot read namespace kube-system, which names the cluster ({exc.status} "
                                f"{exc.reason})") from None
        cluster_id = ""
        try:
            version = await call(client.CustomObjectsApi(api).get_cluster_custom_object, "config.openshift.io", "v1",
                                 "clusterversions", "version")
            cluster_id = str((version.get("spec") or {}).get("clusterID") or "")
        except ApiException:
            pass  # not OpenShift, or not allowed to read it: the uid alone names the cluster
        return cls(server=str(api.configuration.host), kube_system_uid=str(namespace.metadata.uid or ""),
                   cluster_id=cluster_id)

    def same_cluster(self, other: ClusterIdentity) -> bool:
        """The same cluster, whatever URL reaches it (``api`` or ``api-int``, a load balancer)."""
        if self.cluster_id and other.cluster_id and self.cluster_id != other.cluster_id:
            return False
        return bool(self.kube_system_uid) and self.kube_system_uid == other.kube_system_uid

    def describe(self) -> str:
        cluster_id = f"cluster ID {self.cluster_id}, " if self.cluster_id else ""
        return f"{cluster_id}kube-system uid {self.kube_system_uid or '?'}, server {self.server}"

    def to_json(self) -> dict[str, str]:
        return {"server": self.server, "kube_system_uid": self.kube_system_uid, "cluster_id": self.cluster_id}


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
    cluster: ClusterIdentity | None = None  # None only in a v1 file, which did not record it
    taken: dt.datetime | None = None

    @classmethod
    async def take(cls, api: client.ApiClient) -> ClusterSnapshot:
        """Read the Proxy, the trusted CA ConfigMaps (the Proxy's own, if it exists, and
        ``RUN_CA``, which the run writes), ``windows-instances``, the operator's ``trusted-ca``
        labels, every Node's cordon and the cluster's identity."""
        identity = await ClusterIdentity.read(api)
        try:
            proxy = await call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
        except ApiException as exc:
            raise SnapshotError(f"cannot read Proxy/cluster ({exc.status} {exc.reason})") from None
        spec = dict(proxy.get("spec") or {})
        snapshot = cls(proxy_spec=spec, cluster=identity, taken=dt.datetime.now(dt.UTC))
        core = client.CoreV1Api(api)
        proxy_ca = str((spec.get("trustedCA") or {}).get("name") or "")
        if proxy_ca and proxy_ca != RUN_CA:
            # The run never writes it; kept only if it exists (nothing to put back otherwise).
            saved = await read_configmap(core, api, OPENSHIFT_CONFIG, proxy_ca)
            if saved is not None:
                snapshot.configmaps[(OPENSHIFT_CONFIG, proxy_ca)] = saved
        snapshot.configmaps[(OPENSHIFT_CONFIG, RUN_CA)] = await read_configmap(core, api, OPENSHIFT_CONFIG, RUN_CA)
        snapshot.configmaps[(OPERATOR_NAMESPACE, INSTANCES)] = await read_configmap(
            core, api, OPERATOR_NAMESPACE, INSTANCES)
        trusted_ca = await read_configmap(core, api, OPERATOR_NAMESPACE, TRUSTED_CA)
        if trusted_ca is not None:
            snapshot.trusted_ca_labels = dict(trusted_ca["metadata"].get("labels") or {})
        try:
            nodes = await call(core.list_node)
        except ApiException as exc:
            raise SnapshotError(f"cannot list Nodes ({exc.status} {exc.reason})") from None
        snapshot.node_cordons = {n.metadata.name: bool(n.spec and n.spec.unschedulable) for n in nodes.items}
        check_snapshot(snapshot.to_json(), "the snapshot just taken")  # what restore would refuse, it never writes
        return snapshot

    def instance_addresses(self) -> list[str]:
        """The addresses (or names) ``windows-instances`` listed when the snapshot was taken."""
        saved = self.configmaps.get((OPERATOR_NAMESPACE, INSTANCES)) or {}
        return sorted((saved.get("data") or {}).keys())

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

    # --- a file, for a run killed outright or a restore that failed -------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT,
                "cluster": self.cluster.to_json() if self.cluster is not None else None,
                "taken": self.taken.isoformat() if self.taken is not None else None,
                "proxy_spec": self.proxy_spec,
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
        """The snapshot in ``path``, checked strictly (``SnapshotError`` naming the first problem)."""
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SnapshotError(f"cannot read the snapshot {path}: {exc}") from None
        return cls.from_json(data, str(path))

    @classmethod
    def from_json(cls, data: object, source: str) -> ClusterSnapshot:
        check_snapshot(data, source)
        assert isinstance(data, dict)
        cluster = data.get("cluster")
        return cls(proxy_spec=dict(data["proxy_spec"]),
                   configmaps={(c["namespace"], c["name"]): c["saved"] for c in data["configmaps"]},
                   trusted_ca_labels=data["trusted_ca_labels"],
                   node_cordons=dict(data["node_cordons"]), run_cordons=list(data["run_cordons"]),
                   cluster=ClusterIdentity(**cluster) if isinstance(cluster, dict) else None,
                   taken=dt.datetime.fromisoformat(data["taken"]) if data.get("taken") else None)


# --- the file's shape, checked before anything is touched ------------------------------------------

_TOP_KEYS = {"format", "cluster", "taken", "proxy_spec", "configmaps", "trusted_ca_labels", "node_cordons",
             "run_cordons"}


class _Where:
    """Where in the file a value is, for the error line."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> SnapshotError:
        return SnapshotError(f"{self.source} is not a snapshot proxyfleet restores: {key}: {message}; "
                             "nothing was changed")


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), type(value).__name__)


def _strings(where: _Where, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise where.fail(key, f"expected an object of strings, found {_kind(value)}")
    return value


def _keys(where: _Where, key: str, value: object, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[
        str, Any]:
    if not isinstance(value, dict):
        raise where.fail(key, f"expected an object, found {_kind(value)}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise where.fail(key, f"unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    missing = [k for k in required if k not in value]
    if missing:
        raise where.fail(key, f"missing field {missing[0]!r}")
    return value


def _check_proxy_spec(where: _Where, spec: object) -> dict[str, Any]:
    found = _keys(where, "proxy_spec", spec, PROXY_SPEC_FIELDS)
    for name in ("httpProxy", "httpsProxy", "noProxy"):
        if name in found and not isinstance(found[name], str):
            raise where.fail(f"proxy_spec.{name}", f"expected a string, found {_kind(found[name])}")
    endpoints = found.get("readinessEndpoints", [])
    if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
        raise where.fail("proxy_spec.readinessEndpoints", "expected a list of strings")
    if "trustedCA" in found:
        trusted = _keys(where, "proxy_spec.trustedCA", found["trustedCA"], ("name",))
        if not isinstance(trusted.get("name", ""), str):
            raise where.fail("proxy_spec.trustedCA.name", f"expected a string, found {_kind(trusted['name'])}")
    return found


def _check_configmap(where: _Where, index: int, entry: object, proxy_ca: str) -> tuple[str, str]:
    key = f"configmaps[{index}]"
    found = _keys(where, key, entry, ("namespace", "name", "saved"), ("namespace", "name", "saved"))
    namespace, name, saved = found["namespace"], found["name"], found["saved"]
    # Only what a run writes (or, for the Proxy's own bundle, what it saved and may overwrite).
    writes = {(OPENSHIFT_CONFIG, RUN_CA), (OPERATOR_NAMESPACE, INSTANCES)}
    allowed = writes | ({(OPENSHIFT_CONFIG, proxy_ca)} if proxy_ca else set())
    if (namespace, name) not in allowed:
        names = ", ".join(f"{n}/{m}" for n, m in sorted(allowed))
        raise where.fail(key, f"ConfigMap {namespace}/{name} is not one a run writes ({names})")
    if saved is None:
        if (namespace, name) not in writes:
            raise where.fail(f"{key}.saved", f"null would delete ConfigMap {namespace}/{name}, which a run never "
                                             "creates")
        return namespace, name
    body = _keys(where, f"{key}.saved", saved, (*_CONFIGMAP_FIELDS, "metadata"))
    for part in _CONFIGMAP_FIELDS:
        if part in body:
            _strings(where, f"{key}.saved.{part}", body[part])
    metadata = _keys(where, f"{key}.saved.metadata", body.get("metadata", {}), _METADATA_FIELDS)
    for part in _METADATA_FIELDS:
        if part in metadata:
            _strings(where, f"{key}.saved.metadata.{part}", metadata[part])
    return namespace, name


def check_snapshot(data: object, source: str) -> None:
    """Raise ``SnapshotError`` (one line naming ``source`` and the key) unless ``data`` is a
    snapshot a run could have written: known keys and types only, ConfigMaps only among those a
    run writes, deletions only of what a run creates, run cordons only on Nodes it saved as
    schedulable."""
    where = _Where(source)
    if not isinstance(data, dict) or data.get("format") not in (FORMAT, OLD_FORMAT):
        found = data.get("format") if isinstance(data, dict) else _kind(data)
        raise where.fail("format", f"expected {FORMAT!r}, found {found!r}")
    old = data["format"] == OLD_FORMAT
    required = _TOP_KEYS - {"cluster", "taken"} if old else _TOP_KEYS
    top = _keys(where, "(top level)", data, _TOP_KEYS, sorted(required))
    if not old:
        cluster = _strings(where, "cluster", top["cluster"])
        _keys(where, "cluster", cluster, ("server", "kube_system_uid", "cluster_id"),
              ("server", "kube_system_uid", "cluster_id"))
        if not cluster["kube_system_uid"]:
            raise where.fail("cluster.kube_system_uid", "empty: the file names no cluster")
        try:
            dt.datetime.fromisoformat(str(top["taken"]))
        except ValueError:
            raise where.fail("taken", f"expected an ISO 8601 time, found {top['taken']!r}") from None
    spec = _check_proxy_spec(where, top["proxy_spec"])
    proxy_ca = str((spec.get("trustedCA") or {}).get("name") or "")
    if not isinstance(top["configmaps"], list):
        raise where.fail("configmaps", f"expected a list, found {_kind(top['configmaps'])}")
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(top["configmaps"]):
        which = _check_configmap(where, index, entry, proxy_ca)
        if which in seen:
            raise where.fail(f"configmaps[{index}]", f"ConfigMap {which[0]}/{which[1]} is listed twice")
        seen.add(which)
    if top["trusted_ca_labels"] is not None:
        _strings(where, "trusted_ca_labels", top["trusted_ca_labels"])
    cordons = top["node_cordons"]
    if not isinstance(cordons, dict) or not all(isinstance(v, bool) for v in cordons.values()):
        raise where.fail("node_cordons", "expected an object of Node names to true/false")
    runs = top["run_cordons"]
    if not isinstance(runs, list) or not all(isinstance(n, str) for n in runs):
        raise where.fail("run_cordons", "expected a list of Node names")
    for name in runs:
        if not _NAME.fullmatch(name):
            raise where.fail("run_cordons", f"{name!r} is not a Node name")
        if cordons.get(name) is not False:
            raise where.fail("run_cordons", f"Node {name} was not saved as schedulable: not the run's to uncordon")
    if len(set(runs)) != len(runs):
        raise where.fail("run_cordons", "a Node is listed twice")


async def read_configmap(core: client.CoreV1Api, api: client.ApiClient, namespace: str,
                         name: str) -> dict[str, Any] | None:
    """A ConfigMap as a snapshot keeps it (data, binaryData, labels, annotations), or None."""
    try:
        found = await call(core.read_namespaced_config_map, name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise SnapshotError(f"cannot read ConfigMap {namespace}/{name} ({exc.status} {exc.reason})") from None
    body: dict[str, Any] = api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
    metadata = body.get("metadata") or {}
    kept = {k: body[k] for k in _CONFIGMAP_FIELDS if body.get(k) is not None}
    kept["metadata"] = {k: metadata[k] for k in _METADATA_FIELDS if metadata.get(k)}
    return kept
