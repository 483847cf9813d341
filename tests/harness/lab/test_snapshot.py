"""A cluster snapshot keeps exactly what a run may change, names the cluster it came from, is
owner-only, and a file that is not one a run could have written is refused by name before
anything is touched (restoring.py acts on whatever the file says)."""

from __future__ import annotations

import asyncio
import copy
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from proxyfleet.core.contract import INSTANCES, OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, RUN_CA
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.snapshot import FORMAT, ClusterIdentity, ClusterSnapshot, SnapshotError


async def call(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


async def test_a_snapshot_names_its_cluster_and_keeps_what_a_run_may_change(api: client.ApiClient,
                                                                          tmp_path: Path) -> None:
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nacme\n", name="acme-ca")
    await admin.set_proxy(api, http_proxy="http://u:S3cret@proxy.acme.example:8080", trusted_ca="acme-ca")
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    snapshot = await ClusterSnapshot.take(api)
    uid = (await call(client.CoreV1Api(api).read_namespace, "kube-system")).metadata.uid
    assert snapshot.cluster == ClusterIdentity(api.configuration.host, uid, "")
    assert snapshot.taken is not None and snapshot.taken.tzinfo is not None
    assert set(snapshot.configmaps) == {(OPENSHIFT_CONFIG, "acme-ca"), (OPENSHIFT_CONFIG, RUN_CA),
                                        (OPERATOR_NAMESPACE, INSTANCES)}
    assert snapshot.configmaps[(OPENSHIFT_CONFIG, RUN_CA)] is None  # the run creates it: deleted again
    assert snapshot.instance_addresses() == ["10.1.0.5"]
    path = snapshot.write(tmp_path / "snapshot.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the spec holds the proxy's credentials
    again = ClusterSnapshot.read(path)
    assert (again.proxy_spec, again.configmaps, again.cluster, again.taken) == (
        snapshot.proxy_spec, snapshot.configmaps, snapshot.cluster, snapshot.taken)


async def test_a_proxy_naming_a_missing_bundle_saves_no_entry_for_it(api: client.ApiClient) -> None:
    await admin.set_proxy(api, http_proxy="http://proxy.acme.example:8080", trusted_ca="gone-ca")
    snapshot = await ClusterSnapshot.take(api)
    # nothing to put back, and a null entry would delete a ConfigMap the run never created
    assert (OPENSHIFT_CONFIG, "gone-ca") not in snapshot.configmaps


async def test_identity_is_the_clusters_not_the_urls(api: client.ApiClient) -> None:
    here = await ClusterIdentity.read(api)
    assert here.same_cluster(ClusterIdentity("https://api-int.elsewhere:6443", here.kube_system_uid))
    assert not here.same_cluster(ClusterIdentity(here.server, "another-uid"))
    assert not ClusterIdentity("s", "uid", "cluster-a").same_cluster(ClusterIdentity("s", "uid", "cluster-b"))
    assert not ClusterIdentity("s", "").same_cluster(ClusterIdentity("s", ""))  # no uid names no cluster


def _good() -> dict[str, Any]:
    return {"format": FORMAT, "cluster": {"server": "https://api.c:6443", "kube_system_uid": "u-1", "cluster_id": ""},
            "taken": "2026-11-25T10:00:00+00:00",
            "proxy_spec": {"httpProxy": "http://p:3128", "trustedCA": {"name": "acme-ca"}},
            "configmaps": [{"namespace": OPENSHIFT_CONFIG, "name": RUN_CA, "saved": None},
                           {"namespace": OPENSHIFT_CONFIG, "name": "acme-ca",
                            "saved": {"data": {"ca-bundle.crt": "x"}, "metadata": {"labels": {"a": "b"}}}},
                           {"namespace": OPERATOR_NAMESPACE, "name": INSTANCES, "saved": None}],
            "trusted_ca_labels": None, "node_cordons": {"win-a": False, "win-b": True}, "run_cordons": ["win-a"]}


def _set(data: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    *parents, last = path.split(".")
    holder: Any = changed
    for part in parents:
        holder = holder[int(part)] if isinstance(holder, list) else holder[part]
    if value is _DELETE:
        del holder[last]
    elif isinstance(holder, list):
        holder[int(last)] = value
    else:
        holder[last] = value
    return changed


_DELETE = object()


@pytest.mark.parametrize(("path", "value", "message"), [
    ("proxy_spec", [], "proxy_spec: expected an object, found a list"),
    ("proxy_spec", _DELETE, "missing field 'proxy_spec'"),
    ("proxy_spec.httpProxi", "http://p:3128", "proxy_spec: unknown field 'httpProxi'"),
    ("proxy_spec.noProxy", 5, "proxy_spec.noProxy: expected a string, found int"),
    ("proxy_spec.trustedCA", {"name": 1}, "proxy_spec.trustedCA.name: expected a string"),
    ("configmaps.0", {"namespace": "kube-system", "name": "kube-proxy", "saved": None},
     r"configmaps\[0\]: ConfigMap kube-system/kube-proxy is not one a run writes"),
    ("configmaps.1.saved", None, r"configmaps\[1\].saved: null would delete ConfigMap openshift-config/acme-ca"),
    ("configmaps.1.saved.data", {"k": 5}, r"configmaps\[1\].saved.data: expected an object of strings"),
    ("configmaps.1.saved.metadata", {"finalizers": ["x"]}, r"saved.metadata: unknown field 'finalizers'"),
    ("configmaps.1.saved.kind", "Secret", r"configmaps\[1\].saved: unknown field 'kind'"),
    ("configmaps.2.name", RUN_CA, "is not one a run writes"),
    ("configmaps.0.name", "acme-ca", r"configmaps\[0\].saved: null would delete"),
    ("configmaps", {}, "configmaps: expected a list, found an object"),
    ("trusted_ca_labels", ["x"], "trusted_ca_labels: expected an object of strings"),
    ("node_cordons", {"win-a": "no"}, "node_cordons: expected an object of Node names to true/false"),
    ("run_cordons", ["win-b"], "Node win-b was not saved as schedulable"),
    ("run_cordons", ["win-a", "win-a"], "a Node is listed twice"),
    ("run_cordons", ["../x"], "'../x' is not a Node name"),
    ("cluster", _DELETE, "missing field 'cluster'"),
    ("cluster.kube_system_uid", "", "the file names no cluster"),
    ("cluster.extra", "x", "cluster: unknown field 'extra'"),
    ("taken", "yesterday", "taken: expected an ISO 8601 time"),
    ("format", "proxyfleet-cluster-snapshot/v9", "format: expected 'proxyfleet-cluster-snapshot/v2'"),
    ("surprise", 1, r"\(top level\): unknown field 'surprise'"),
])
def test_a_file_a_run_could_not_have_written_is_refused_by_name(path: str, value: object, message: str) -> None:
    ClusterSnapshot.from_json(_good(), "s.json")  # the baseline is accepted
    with pytest.raises(SnapshotError, match=message) as caught:
        ClusterSnapshot.from_json(_set(_good(), path, value), "s.json")
    text = str(caught.value)
    assert text.startswith("s.json is not a snapshot proxyfleet restores: ") and text.endswith("nothing was changed")
    assert "\n" not in text


def test_a_file_that_is_not_json_or_not_there_is_refused(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{"format": ')
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(SnapshotError, match=r"cannot read the snapshot .*broken\.json"):
        ClusterSnapshot.read(tmp_path / "broken.json")
    with pytest.raises(SnapshotError, match=r"format: expected .* found 'a list'"):
        ClusterSnapshot.read(tmp_path / "list.json")
    with pytest.raises(SnapshotError, match="cannot read"):
        ClusterSnapshot.read(tmp_path / "missing.json")


def test_a_file_of_the_older_format_is_read_without_a_cluster() -> None:
    old = {k: v for k, v in _good().items() if k not in ("cluster", "taken")}
    old["format"] = "proxyfleet-cluster-snapshot/v1"
    snapshot = ClusterSnapshot.from_json(old, "old.json")
    assert snapshot.cluster is None and snapshot.taken is None  # restore refuses it without --force


async def test_only_a_node_schedulable_at_the_start_is_the_runs_to_cordon(api: client.ApiClient,
                                                                         tmp_path: Path) -> None:
    for name in ("win-a", "win-c"):
        await call(client.CoreV1Api(api).create_node, client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    await admin.cordon(api, "win-c", True)  # an administrator's maintenance, before the run
    path = (await ClusterSnapshot.take(api)).write(tmp_path / "snapshot.json")
    assert ClusterSnapshot.read(path).node_cordons == {"win-a": False, "win-c": True}
    ClusterSnapshot.record_run_cordon(path, "win-a", True)
    with pytest.raises(SnapshotError, match="win-c was not schedulable when the run began"):
        ClusterSnapshot.record_run_cordon(path, "win-c", True)
    assert ClusterSnapshot.read(path).run_cordons == ["win-a"]
    ClusterSnapshot.record_run_cordon(path, "win-a", False)
    assert ClusterSnapshot.read(path).run_cordons == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["format"] == FORMAT
