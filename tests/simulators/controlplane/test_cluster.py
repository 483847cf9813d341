"""The embedded control plane as a whole: the installer's objects at start, a private kubeconfig
for the official client, per-node kubelet identities, and a restart that keeps the cluster."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from kubernetes import client, config

from proxyfleet.core.contract import PROXY
from proxyfleet.simulators.controlplane.cluster import ControlPlane


async def test_start_installs_the_cluster_and_writes_a_private_kubeconfig(control_plane: ControlPlane) -> None:
    path: Path = control_plane.kubeconfig_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the admin token
    api = config.new_client_from_config(config_file=str(path))
    try:
        proxy = await asyncio.to_thread(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
        assert proxy["metadata"]["name"] == "cluster"
    finally:
        api.close()
    assert control_plane.internal_url.startswith("https://api-int.")


async def test_kubelet_tokens_are_per_node(control_plane: ControlPlane) -> None:
    one, two = control_plane.kubelet_token("win-0001"), control_plane.kubelet_token("win-0002")
    assert one != two and control_plane.kubelet_token("win-0001") == one
    assert control_plane.admin_token not in (one, two)


async def test_a_restart_keeps_objects_and_serves_again(control_plane: ControlPlane) -> None:
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    core = client.CoreV1Api(api)
    try:
        await asyncio.to_thread(core.create_node, {"metadata": {"name": "win-0001"}})
        await control_plane.restart()
        assert control_plane.node_unschedulable("win-0001") is False
        names = [n.metadata.name for n in (await asyncio.to_thread(core.list_node)).items]
        assert names == ["win-0001"]
        assert control_plane.node_unschedulable("nope") is None
    finally:
        api.close()


async def test_a_drain_must_move_a_terminating_pod_until_it_is_gone(control_plane: ControlPlane) -> None:
    """Lab evidence for ``drained``: a pod a drain evicted is still bound while it terminates (its
    grace period; no kubelet here ends it), so it is still to move; a DaemonSet's never is."""
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    core = client.CoreV1Api(api)
    try:
        await asyncio.to_thread(core.create_node, {"metadata": {"name": "win-0001"}})
        for name, owners in (("app", []), ("agent", [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                                      "uid": "u-ds", "controller": True}])):
            await asyncio.to_thread(core.create_namespaced_pod, "default", {
                "metadata": {"name": name, "ownerReferences": owners},
                "spec": {"nodeName": "win-0001", "terminationGracePeriodSeconds": 30,
                         "containers": [{"name": "c", "image": "x"}]}})
        assert control_plane.pods_to_drain("win-0001") == ("default/app",)
        await asyncio.to_thread(core.delete_namespaced_pod, "app", "default")  # as an eviction ends
        assert control_plane.pods_to_drain("win-0001") == ("default/app (Terminating: evicted, not yet gone)",)
        await asyncio.to_thread(core.delete_namespaced_pod, "app", "default", grace_period_seconds=0)
        assert control_plane.pods_to_drain("win-0001") == ()
    finally:
        api.close()
