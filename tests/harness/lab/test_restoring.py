"""Putting a cluster back: exactly what a run changed, each object on its own, a conflict tried
again from a fresh read, every failure reported, a bundle the run created deleted only once the
Proxy no longer names it, and a snapshot of another cluster refused unless forced."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from proxyfleet.core.contract import (
    INJECT_LABEL,
    INSTANCES,
    OPENSHIFT_CONFIG,
    OPERATOR_NAMESPACE,
    PROXY,
    RUN_CA,
    TRUSTED_CA,
)
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.restoring import check_identity, plan, restore, signals_ignored
from proxyfleet.harness.lab.snapshot import ClusterIdentity, ClusterSnapshot, SnapshotError
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.apifront import api_front


async def call(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


async def no_wait(seconds: float) -> None:
    return None


async def _state(api: client.ApiClient) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = (await call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY))["spec"]
    core = client.CoreV1Api(api)
    found = {}
    for namespace, name in ((OPENSHIFT_CONFIG, "acme-ca"), (OPENSHIFT_CONFIG, RUN_CA), (OPERATOR_NAMESPACE, INSTANCES)):
        try:
            configmap = await call(core.read_namespaced_config_map, name, namespace)
            found[name] = (configmap.data, configmap.metadata.labels)
        except client.exceptions.ApiException as exc:
            assert exc.status == 404
    return spec, found


async def _left_by_a_run(api: client.ApiClient) -> ClusterSnapshot:
    """The customer's cluster saved, then changed as a run leaves it."""
    await _customer_cluster(api)
    snapshot = await ClusterSnapshot.take(api)
    await _the_run(api)
    return snapshot


async def _customer_cluster(api: client.ApiClient) -> None:
    """A proxy with credentials, the customer's CA bundle, two instances."""
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nacme\n", name="acme-ca")
    await admin.set_proxy(api, http_proxy="http://u:S3cret@proxy.acme.example:8080", no_proxy=".acme.example",
                          trusted_ca="acme-ca")
    await admin.set_instances(api, [("10.1.0.5", "Administrator"), ("10.1.0.6", "Administrator")])


async def _the_run(api: client.ApiClient) -> None:
    """What a run leaves: its own proxy and bundle, the customer's bundle overwritten, one instance gone."""
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nlab\n", name=RUN_CA)
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nchanged\n", name="acme-ca")
    await admin.set_proxy(api, http_proxy="http://proxy.corp.internal:3128", trusted_ca=RUN_CA)
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])


async def test_what_a_run_changes_is_put_back_and_what_it_created_is_deleted(api: client.ApiClient) -> None:
    await _customer_cluster(api)
    before = await _state(api)
    snapshot = await ClusterSnapshot.take(api)
    await _the_run(api)
    assert await _state(api) != before
    report = await restore(snapshot, api)
    assert report.complete and await _state(api) == before
    assert report.done == ["Proxy/cluster spec restored", f"ConfigMap {OPENSHIFT_CONFIG}/acme-ca restored",
                           f"ConfigMap {OPENSHIFT_CONFIG}/{RUN_CA} deleted (the run created it)",
                           f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES} restored"]
    again = await restore(snapshot, api)
    assert again.complete and again.done == []  # idempotent


async def test_each_object_is_put_back_on_its_own_and_every_failure_is_named(plane: ControlPlane,
                                                                           api: client.ApiClient,
                                                                           tmp_path: Path) -> None:
    snapshot = await _left_by_a_run(api)
    async with api_front(plane) as front:
        # The Proxy cannot be written back (a validating webhook says no, say); the rest can.
        front.refuse("PUT", "/proxies/cluster", 422, message="admission webhook denied the request")
        through = front.client(plane, tmp_path / "kubeconfig")
        report = await restore(snapshot, through, sleep=no_wait)
    assert not report.complete
    assert report.failed == [
        "Proxy/cluster spec: 422 Invalid: admission webhook denied the request",
        # its bundle stays while the Proxy still names it: deleting it would break the Proxy too
        f"ConfigMap {OPENSHIFT_CONFIG}/{RUN_CA}: left in place: the Proxy still names it as its trusted CA"]
    assert report.done == [f"ConfigMap {OPENSHIFT_CONFIG}/acme-ca restored",
                           f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES} restored"]
    assert await admin.instances(api) == {"10.1.0.5": "Administrator", "10.1.0.6": "Administrator"}
    # once the cause is gone, the same snapshot finishes the job
    later = await restore(snapshot, api)
    assert later.complete and later.done == ["Proxy/cluster spec restored",
                                             f"ConfigMap {OPENSHIFT_CONFIG}/{RUN_CA} deleted (the run created it)"]


async def test_a_conflict_is_tried_again_from_a_fresh_read(plane: ControlPlane, api: client.ApiClient,
                                                           tmp_path: Path) -> None:
    snapshot = await _left_by_a_run(api)
    async with api_front(plane) as front:
        front.refuse("PUT", "/proxies/cluster", 409, times=2, message="the object has been modified")
        through = front.client(plane, tmp_path / "kubeconfig")
        report = await restore(snapshot, through, sleep=no_wait)
    assert report.complete and "Proxy/cluster spec restored" in report.done
    assert [r for r in front.refused if r[0] == "PUT"] == [("PUT", "/apis/config.openshift.io/v1/proxies/cluster",
                                                           409)] * 2


async def test_a_conflict_that_never_clears_fails_that_object_after_its_attempts(plane: ControlPlane,
                                                                                api: client.ApiClient,
                                                                                tmp_path: Path) -> None:
    snapshot = await _left_by_a_run(api)
    async with api_front(plane) as front:
        front.refuse("PUT", f"/configmaps/{INSTANCES}", 409)
        through = front.client(plane, tmp_path / "kubeconfig")
        report = await restore(snapshot, through, attempts=3, sleep=no_wait)
    assert report.failed == [f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES}: 409 Conflict: refused by the test's API "
                             "gateway (after 3 attempts)"]
    assert "Proxy/cluster spec restored" in report.done


async def test_an_expired_token_fails_every_write_and_each_is_reported(plane: ControlPlane, api: client.ApiClient,
                                                                       tmp_path: Path) -> None:
    snapshot = await _left_by_a_run(api)
    async with api_front(plane) as front:
        for method in ("PUT", "POST", "PATCH", "DELETE"):
            front.refuse(method, "/", 401, message="Unauthorized")
        through = front.client(plane, tmp_path / "kubeconfig")
        report = await restore(snapshot, through, sleep=no_wait)
    assert report.done == []
    assert report.failed == ["Proxy/cluster spec: 401 Unauthorized: Unauthorized",
                             f"ConfigMap {OPENSHIFT_CONFIG}/acme-ca: 401 Unauthorized: Unauthorized",
                             f"ConfigMap {OPENSHIFT_CONFIG}/{RUN_CA}: left in place: the Proxy still names it as its "
                             "trusted CA",
                             f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES}: 401 Unauthorized: Unauthorized"]
    assert len([r for r in front.refused if r[2] == 401]) == 3  # not retried: another try cannot help


async def test_the_plan_says_what_would_change_without_credentials(api: client.ApiClient) -> None:
    snapshot = await _left_by_a_run(api)
    left = await _state(api)
    lines = await plan(snapshot, api)
    assert await _state(api) == left  # reading touched nothing
    text = "\n".join(lines)
    assert "S3cret" not in text and '"http://***:***@proxy.acme.example:8080"' in text
    assert f"ConfigMap {OPENSHIFT_CONFIG}/{RUN_CA}: deleted (the run created it)" in lines
    assert f"ConfigMap {OPENSHIFT_CONFIG}/acme-ca: restored (data ca-bundle.crt differ)" in lines
    await restore(snapshot, api)
    assert await plan(snapshot, api) == []


async def test_a_deleted_configmap_is_created_again(api: client.ApiClient) -> None:
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    snapshot = await ClusterSnapshot.take(api)
    await call(client.CoreV1Api(api).delete_namespaced_config_map, INSTANCES, OPERATOR_NAMESPACE)
    report = await restore(snapshot, api)
    assert report.done == [f"ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES} created again (the run deleted it)"]
    assert await admin.instances(api) == {"10.1.0.5": "Administrator"}


async def _trusted_ca(api: client.ApiClient) -> client.V1ConfigMap | None:
    try:
        found: client.V1ConfigMap = await call(client.CoreV1Api(api).read_namespaced_config_map, TRUSTED_CA,
                                               OPERATOR_NAMESPACE)
    except client.exceptions.ApiException as exc:
        assert exc.status == 404
        return None
    return found


async def test_the_operators_trusted_ca_gets_back_its_existence_and_labels_and_is_never_deleted(
        api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    assert (await ClusterSnapshot.take(api)).trusted_ca_labels is None  # no operator made one: nothing to restore
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": TRUSTED_CA, "labels": {INJECT_LABEL: "true", "app": "wmco"}}})
    snapshot = await ClusterSnapshot.take(api)
    # the drift workflow removes its injection label (a broken operator never puts it back)
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=False)
    assert (await restore(snapshot, api)).done == [
        f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA} labels restored: {INJECT_LABEL}"]
    restored = await _trusted_ca(api)
    assert restored is not None and restored.metadata.labels == {INJECT_LABEL: "true", "app": "wmco"}
    # deleted, and a broken operator never creates it again: the run does, labels only
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=True)
    assert (await restore(snapshot, api)).done == [
        f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA} created again with its labels (the bundle is injected)"]
    restored = await _trusted_ca(api)
    assert restored is not None and restored.metadata.labels == {INJECT_LABEL: "true", "app": "wmco"}
    assert (await restore(snapshot, api)).done == []  # idempotent
    # one that did not exist when the run began is never deleted: it is the operator's
    await call(core.delete_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE)
    empty = await ClusterSnapshot.take(api)
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE, {"metadata": {"name": TRUSTED_CA}})
    assert (await restore(empty, api)).done == [] and await _trusted_ca(api) is not None


async def _cordoned(api: client.ApiClient, name: str) -> bool:
    return bool((await call(client.CoreV1Api(api).read_node, name)).spec.unschedulable)


async def test_only_the_runs_own_cordons_are_lifted(api: client.ApiClient, tmp_path: Path) -> None:
    for name in ("win-a", "win-b", "win-c"):
        await call(client.CoreV1Api(api).create_node, client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    await admin.cordon(api, "win-c", True)  # an administrator's maintenance, before the run
    path = (await ClusterSnapshot.take(api)).write(tmp_path / "snapshot.json")
    # the run notes its cordon before setting it; the operator cordons another node for a reboot
    ClusterSnapshot.record_run_cordon(path, "win-a", True)
    await admin.cordon(api, "win-a", True)
    await admin.cordon(api, "win-b", True)
    assert (await restore(ClusterSnapshot.read(path), api)).done == [
        "Node win-a uncordoned (the run's maintenance cordon)"]
    assert [await _cordoned(api, n) for n in ("win-a", "win-b", "win-c")] == [False, True, True]
    # a cordon the run lifted itself is no longer its to restore
    ClusterSnapshot.record_run_cordon(path, "win-a", False)
    await admin.cordon(api, "win-a", True)  # now someone else's
    assert (await restore(ClusterSnapshot.read(path), api)).done == []
    assert await _cordoned(api, "win-a")


def test_a_snapshot_of_another_cluster_is_refused_unless_forced() -> None:
    here = ClusterIdentity("https://api.here:6443", "uid-here")
    mine = ClusterSnapshot(proxy_spec={}, cluster=ClusterIdentity("https://api-int.here:6443", "uid-here"))
    assert check_identity(mine, here, "s.json", force=False) is None
    theirs = ClusterSnapshot(proxy_spec={}, cluster=ClusterIdentity("https://api.there:6443", "uid-there"))
    with pytest.raises(SnapshotError, match=r"s\.json was saved from another cluster .*uid-there.*; this kubeconfig "
                                            r"reaches .*uid-here.*: not restored .*--force"):
        check_identity(theirs, here, "s.json", force=False)
    assert "another cluster" in (check_identity(theirs, here, "s.json", force=True) or "")
    old = ClusterSnapshot(proxy_spec={})  # an older proxyfleet's file names no cluster
    with pytest.raises(SnapshotError, match="did not record its cluster"):
        check_identity(old, here, "s.json", force=False)


def test_ctrl_c_and_sigterm_wait_while_the_cluster_is_put_back() -> None:
    handlers = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    with signals_ignored():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)  # neither interrupts nor ends the process
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
