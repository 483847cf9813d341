"""``proxyfleet restore`` puts a cluster back from a run's saved snapshot (a run killed outright
could not) — its maintenance cordon lifted too — from its own process, and names a file that is
not a snapshot."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from kubernetes import client

from proxyfleet.core.contract import PROXY
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.snapshot import ClusterSnapshot
from proxyfleet.simulators.controlplane.cluster import ControlPlane


async def _restore(plane: ControlPlane, snapshot: Path) -> tuple[int, str, str]:
    # a process of its own, while this event loop keeps serving the control plane
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "restore", "--kubeconfig", str(plane.kubeconfig_path),
        "--snapshot", str(snapshot), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_restore_puts_back_what_a_killed_run_changed(plane: ControlPlane, api: client.ApiClient,
                                                           tmp_path: Path) -> None:
    await admin.set_instances(api, [("10.1.0.5", "Administrator"), ("10.1.0.6", "Administrator")])
    core = client.CoreV1Api(api)
    await asyncio.to_thread(core.create_node, client.V1Node(metadata=client.V1ObjectMeta(name="win-0001")))
    snapshot = (await ClusterSnapshot.take(api, ["proxyfleet-run-ca"])).write(tmp_path / "cluster-snapshot.json")
    # what the run had done when it was killed: its maintenance cordon among it
    ClusterSnapshot.record_run_cordon(snapshot, "win-0001", True)
    await admin.cordon(api, "win-0001", True)
    await admin.set_trusted_ca(api, "-----BEGIN CERTIFICATE-----\nrun\n", name="proxyfleet-run-ca")
    await admin.set_proxy(api, http_proxy="http://proxy.corp.example:3128", trusted_ca="proxyfleet-run-ca")
    await admin.set_instances(api, [("10.1.0.5", "Administrator")])
    code, out, err = await _restore(plane, snapshot)
    assert code == 0, err
    assert "Proxy/cluster spec restored" in out and "proxyfleet-run-ca deleted" in out
    assert "Node win-0001 uncordoned (the run's maintenance cordon)" in out
    assert not (await asyncio.to_thread(core.read_node, "win-0001")).spec.unschedulable
    spec = (await asyncio.to_thread(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY))["spec"]
    assert not spec.get("httpProxy") and not spec.get("trustedCA", {}).get("name")
    assert await admin.instances(api) == {"10.1.0.5": "Administrator", "10.1.0.6": "Administrator"}
    code, out, _ = await _restore(plane, snapshot)  # again: nothing left to do
    assert code == 0 and "nothing to do" in out
    (tmp_path / "other.json").write_text("{}")
    code, _, err = await _restore(plane, tmp_path / "other.json")
    assert code == 1 and "is not a proxyfleet cluster snapshot" in err
