"""``proxyfleet restore`` puts a cluster back from a run's saved snapshot (a run killed outright, or
one whose put-back the cluster refused) — its maintenance cordon lifted too — from its own
process; a file that is not a snapshot a run could have written, or one of another cluster, is
one error line with nothing touched; ``--force`` shows what it changes first."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import yaml
from kubernetes import client

from proxyfleet.core.contract import PROXY, RUN_CA
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.snapshot import ClusterSnapshot
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.support import HANG


async def _restore(plane: ControlPlane, snapshot: Path, *more: str, kubeconfig: Path | None = None
                   ) -> tuple[int, str, str]:
    # a process of its own, while this event loop keeps serving the control plane
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "restore", "--kubeconfig", str(kubeconfig or plane.kubeconfig_path),
        "--snapshot", str(snapshot), *more, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), HANG)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _proxy_spec(api: client.ApiClient) -> dict[str, object]:
    found: dict[str, object] = (await asyncio.to_thread(client.CustomObjectsApi(api).get_cluster_custom_object,
                                                        *PROXY))["spec"]
    return found


async def test_restore_puts_back_what_a_killed_run_changed(plane: ControlPlane, api: client.ApiClient,
                                                           tmp_path: Path) -> None:
    await admin.set_instances(api, [("10.1.0.5", "Administrator"), ("10.1.0.6", "Administrator")])
    core = client.CoreV1Api(api)
    await asyncio.to_thread(core.create_node, client.V1Node(metadata=client.V1ObjectMeta(name="win-0001")))
    snapshot = (await ClusterSnapshot.take(api)).write(tmp_path / "cluster-snapshot.json")
    # what the run had done when it was killed: its maintenance cordon among it
    ClusterSnapshot.record_run_cordon(snapshot, "win-0001", True)
    await admin.cordon(api, "win-0001", True)
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nrun\n", name=RUN_CA)
    await admin.set_proxy(api, http_proxy="http://proxy.corp.example:3128", trusted_ca=RUN_CA)
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    code, out, err = await _restore(plane, snapshot)
    assert code == 0, err
    assert "Proxy/cluster spec restored" in out and f"{RUN_CA} deleted" in out
    assert "Node win-0001 uncordoned (the run's maintenance cordon)" in out
    assert not (await asyncio.to_thread(core.read_node, "win-0001")).spec.unschedulable
    spec = await _proxy_spec(api)
    assert not spec.get("httpProxy") and not spec.get("trustedCA", {}).get("name")  # type: ignore[attr-defined]
    assert await admin.instances(api) == {"10.1.0.5": "Administrator", "10.1.0.6": "Administrator"}
    code, out, _ = await _restore(plane, snapshot)  # again: nothing left to do
    assert code == 0 and "nothing to do" in out
    # the objects are back, but no instance has a Node: --wait-restored says so and exits 3
    code, out, err = await _restore(plane, snapshot, "--wait-restored", "1s")
    assert code == 3, err
    assert "still rolling after 1 s" in err and "instance 10.1.0.5: no Node" in err


async def test_a_malformed_snapshot_is_one_line_and_touches_nothing(plane: ControlPlane, api: client.ApiClient,
                                                                    tmp_path: Path) -> None:
    await admin.set_proxy(api, http_proxy="http://proxy.acme.example:8080")
    good = (await ClusterSnapshot.take(api)).to_json()
    cases = {
        "empty-spec": {**good, "proxy_spec": []},
        "no-spec": {k: v for k, v in good.items() if k != "proxy_spec"},
        "kube-system": {**good, "configmaps": [{"namespace": "kube-system", "name": "coredns", "saved": None}]},
        "half-entry": {**good, "configmaps": [{"namespace": "openshift-config"}]},
        "not-a-snapshot": {},
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        code, out, err = await _restore(plane, path)
        assert code == 2, (name, out, err)
        assert err.startswith("Error: ") and err.count("\n") == 1 and "Traceback" not in err, (name, err)
        assert "nothing was changed" in err, (name, err)
    assert (await _proxy_spec(api))["httpProxy"] == "http://proxy.acme.example:8080"  # nothing touched


async def test_another_clusters_snapshot_is_refused_and_forced_with_a_diff(plane: ControlPlane, api: client.ApiClient,
                                                                           tmp_path: Path) -> None:
    await admin.set_proxy(api, http_proxy="http://u:S3cret@proxy.acme.example:8080")
    data = (await ClusterSnapshot.take(api)).to_json()
    data["cluster"]["kube_system_uid"] = "uid-of-another-cluster"
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps(data))
    await admin.set_proxy(api, http_proxy="http://proxy.corp.internal:3128")
    code, _, err = await _restore(plane, path)
    assert code == 2 and "was saved from another cluster" in err and "uid-of-another-cluster" in err
    assert (await _proxy_spec(api))["httpProxy"] == "http://proxy.corp.internal:3128"
    code, out, err = await _restore(plane, path, "--dry-run")
    assert code == 0 and "would change:" in out and "touch" not in out
    assert '"http://proxy.corp.internal:3128" -> "http://***:***@proxy.acme.example:8080"' in out
    assert (await _proxy_spec(api))["httpProxy"] == "http://proxy.corp.internal:3128"  # a dry run changes nothing
    code, out, err = await _restore(plane, path, "--force")
    assert code == 0, err
    assert "warning: " in err and "S3cret" not in out + err
    assert out.index("would change:") < out.index("Proxy/cluster spec restored")  # shown before it is done
    assert (await _proxy_spec(api))["httpProxy"] == "http://u:S3cret@proxy.acme.example:8080"


async def test_restore_uses_the_context_a_run_printed(plane: ControlPlane, api: client.ApiClient,
                                                     tmp_path: Path) -> None:
    """A run prints ``proxyfleet restore --kubeconfig K --context C``: the context it checked, even
    if the file's current context has moved on since (to a cluster not reachable here)."""
    snapshot = (await ClusterSnapshot.take(api)).write(tmp_path / "cluster-snapshot.json")
    document = plane.kubeconfig()
    document["clusters"].append({"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:1"}})
    document["contexts"].append({"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "admin"}})
    pinned = document["current-context"]
    document["current-context"] = "elsewhere"  # `kubectl config use-context elsewhere` since the run
    moved = tmp_path / "kubeconfig"
    moved.write_text(yaml.safe_dump(document))
    moved.chmod(0o600)
    code, out, err = await _restore(plane, snapshot, "--context", pinned, kubeconfig=moved)
    assert code == 0 and "nothing to do" in out, err
    code, _, err = await _restore(plane, snapshot, kubeconfig=moved)  # the current context: another cluster
    assert code == 1 and "Traceback" not in err and "cannot reach the cluster's API server https://127.0.0.1:1" in err
