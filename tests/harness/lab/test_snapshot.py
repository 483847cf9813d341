"""A cluster snapshot puts back exactly what a run changed: the Proxy's spec, the trusted CA
ConfigMaps and windows-instances; what the run created is deleted; the saved file is owner-only."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from proxyfleet.core.contract import INJECT_LABEL, INSTANCES, OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, PROXY, TRUSTED_CA
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.snapshot import ClusterSnapshot, SnapshotError


async def call(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


async def _state(api: client.ApiClient) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = (await call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY))["spec"]
    core = client.CoreV1Api(api)
    found = {}
    for namespace, name in ((OPENSHIFT_CONFIG, "acme-ca"), (OPENSHIFT_CONFIG, "corp-ca"),
                            (OPERATOR_NAMESPACE, INSTANCES)):
        try:
            configmap = await call(core.read_namespaced_config_map, name, namespace)
            found[name] = (configmap.data, configmap.metadata.labels)
        except client.exceptions.ApiException as exc:
            assert exc.status == 404
    return spec, found


async def test_what_a_run_changes_is_put_back_and_what_it_created_is_deleted(api: client.ApiClient,
                                                                             tmp_path: Path) -> None:
    # The customer's cluster: a proxy with credentials, their CA bundle, two instances.
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nacme\n", name="acme-ca")
    await admin.set_proxy(api, http_proxy="http://u:S3cret@proxy.acme.example:8080", no_proxy=".acme.example",
                          trusted_ca="acme-ca")
    await admin.set_instances(api, [("10.1.0.5", "Administrator"), ("10.1.0.6", "Administrator")])
    before = await _state(api)
    snapshot = await ClusterSnapshot.take(api, trusted_ca_names=["corp-ca"])
    path = snapshot.write(tmp_path / "snapshot.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # The run: its own proxy, its own bundle under another name, the acme bundle overwritten,
    # one instance removed.
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nlab\n", name="corp-ca")
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nchanged\n", name="acme-ca")
    await admin.set_proxy(api, http_proxy="http://proxy.corp.internal:3128", trusted_ca="corp-ca")
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    assert await _state(api) != before
    done = await ClusterSnapshot.read(path).restore(api)
    assert await _state(api) == before
    assert sorted(done) == ["ConfigMap openshift-config/acme-ca restored",
                            "ConfigMap openshift-config/corp-ca deleted (the run created it)",
                            f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES} restored", "Proxy/cluster spec restored"]
    assert await ClusterSnapshot.read(path).restore(api) == []  # nothing left to do: idempotent


async def test_a_deleted_configmap_is_created_again(api: client.ApiClient) -> None:
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    snapshot = await ClusterSnapshot.take(api)
    await call(client.CoreV1Api(api).delete_namespaced_config_map, INSTANCES, OPERATOR_NAMESPACE)
    assert await snapshot.restore(api) == [f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES} created again (the run "
                                           "deleted it)"]
    assert (await call(client.CoreV1Api(api).read_namespaced_config_map, INSTANCES, OPERATOR_NAMESPACE)).data == {
        "10.1.0.5": "username=Administrator"}


async def _trusted_ca(api: client.ApiClient) -> client.V1ConfigMap | None:
    try:
        found: client.V1ConfigMap = await call(client.CoreV1Api(api).read_namespaced_config_map, TRUSTED_CA,
                                               OPERATOR_NAMESPACE)
    except client.exceptions.ApiException as exc:
        assert exc.status == 404
        return None
    return found


async def test_the_operators_trusted_ca_gets_back_its_existence_and_labels_and_is_never_deleted(
        api: client.ApiClient, tmp_path: Path) -> None:
    core = client.CoreV1Api(api)
    assert (await ClusterSnapshot.take(api)).trusted_ca_labels is None  # no operator made one: nothing to restore
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": TRUSTED_CA, "labels": {INJECT_LABEL: "true", "app": "wmco"}}})
    path = (await ClusterSnapshot.take(api)).write(tmp_path / "snapshot.json")
    # the drift workflow removes its injection label (a broken operator never puts it back)
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=False)
    assert await ClusterSnapshot.read(path).restore(api) == [
        f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA} labels restored: {INJECT_LABEL}"]
    restored = await _trusted_ca(api)
    assert restored is not None and restored.metadata.labels == {INJECT_LABEL: "true", "app": "wmco"}
    # deleted, and a broken operator never creates it again: the run does, labels only
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=True)
    assert await ClusterSnapshot.read(path).restore(api) == [
        f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA} created again with its labels (the bundle is injected)"]
    restored = await _trusted_ca(api)
    assert restored is not None and restored.metadata.labels == {INJECT_LABEL: "true", "app": "wmco"}
    assert await ClusterSnapshot.read(path).restore(api) == []  # idempotent
    # one that did not exist when the run began is never deleted: it is the operator's
    await call(core.delete_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE)
    empty = await ClusterSnapshot.take(api)
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE, {"metadata": {"name": TRUSTED_CA}})
    assert await empty.restore(api) == [] and await _trusted_ca(api) is not None


def test_a_file_that_is_not_a_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(SnapshotError, match="not a proxyfleet cluster snapshot"):
        ClusterSnapshot.read(tmp_path / "other.json")
    with pytest.raises(SnapshotError, match="cannot read"):
        ClusterSnapshot.read(tmp_path / "missing.json")


async def _cordoned(api: client.ApiClient, name: str) -> bool:
    return bool((await call(client.CoreV1Api(api).read_node, name)).spec.unschedulable)


async def test_only_the_runs_own_cordons_are_lifted(api: client.ApiClient, tmp_path: Path) -> None:
    for name in ("win-a", "win-b", "win-c"):
        await call(client.CoreV1Api(api).create_node, client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    await admin.cordon(api, "win-c", True)  # an administrator's maintenance, before the run
    path = (await ClusterSnapshot.take(api)).write(tmp_path / "snapshot.json")
    assert ClusterSnapshot.read(path).node_cordons == {"win-a": False, "win-b": False, "win-c": True}
    # the run notes its cordon before setting it; the operator cordons another node for a reboot
    ClusterSnapshot.record_run_cordon(path, "win-a", True)
    await admin.cordon(api, "win-a", True)
    await admin.cordon(api, "win-b", True)
    with pytest.raises(SnapshotError, match="win-c was not schedulable when the run began"):
        ClusterSnapshot.record_run_cordon(path, "win-c", True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    done = await ClusterSnapshot.read(path).restore(api)
    assert done == ["Node win-a uncordoned (the run's maintenance cordon)"]
    assert [await _cordoned(api, n) for n in ("win-a", "win-b", "win-c")] == [False, True, True]
    # a cordon the run lifted itself is no longer its to restore
    ClusterSnapshot.record_run_cordon(path, "win-a", False)
    await admin.cordon(api, "win-a", True)  # now someone else's
    assert await ClusterSnapshot.read(path).restore(api) == []
    assert await _cordoned(api, "win-a")
