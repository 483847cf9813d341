"""The lab's workloads through the official client: pods spread one per node by the ReplicaSet
controller and scheduler, DaemonSet pods on every node, nothing new on a cordoned node, pods of a
deleted Node collected; the Eviction API honours the PodDisruptionBudget (429 in the server's
words), a direct delete against the budget is recorded, and a kubelet writes only its own pods."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from proxyfleet.simulators.controlplane import workloads
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.resources import DAEMONSETS, NODES, PDBS, PODS
from proxyfleet.simulators.controlplane.store import Store
from proxyfleet.simulators.controlplane.workloads import (
    AGENT_NAME,
    SERVICE_NAME,
    SERVICE_PODS,
    WORKLOAD_NAMESPACE,
    WorkloadControllers,
    evictable,
    lab_workloads,
    service_names,
    service_sizes,
)
from tests.simulators.controlplane.apirequests import raw
from tests.support import run_bound_pods, wait_until, workload_plane

NODE_NAMES = ("win-0001", "win-0002", "win-0003")


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[ControlPlane]:
    async with workload_plane(tmp_path / "cluster", NODE_NAMES) as control_plane:
        yield control_plane


@pytest.fixture
def core(plane: ControlPlane) -> AsyncIterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=str(plane.kubeconfig_path))
    yield client.CoreV1Api(api)
    api.close()


def pods(plane: ControlPlane, app: str) -> list[dict[str, Any]]:
    return [p for p in plane.store.list(PODS, WORKLOAD_NAMESPACE) if p["metadata"]["labels"]["app"] == app]


def active(plane: ControlPlane, app: str) -> list[dict[str, Any]]:
    """Pods not being deleted (a Terminating one is still listed, still bound)."""
    return [p for p in pods(plane, app) if not p["metadata"].get("deletionTimestamp")]


async def settled(plane: ControlPlane) -> None:
    def spread() -> bool:
        web = pods(plane, SERVICE_NAME)
        return (sorted(p["spec"].get("nodeName", "") for p in web) == list(NODE_NAMES)
                and sorted(p["spec"].get("nodeName", "") for p in pods(plane, AGENT_NAME)) == list(NODE_NAMES))
    await wait_until(spread, what="one web and one agent pod per node")
    run_bound_pods(plane)
    await wait_until(lambda: (plane.store.get(PDBS, WORKLOAD_NAMESPACE, SERVICE_NAME).get("status") or {})
                     .get("disruptionsAllowed") == 1, what="the budget to allow one disruption")


def evict(core: client.CoreV1Api, pod: dict[str, Any]) -> Any:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod["metadata"]["name"],
                                                          namespace=WORKLOAD_NAMESPACE))
    return asyncio.to_thread(core.create_namespaced_pod_eviction, pod["metadata"]["name"], WORKLOAD_NAMESPACE, body)


async def test_pods_spread_daemon_pods_everywhere_and_the_budget_is_published(plane: ControlPlane) -> None:
    await settled(plane)
    status = plane.store.get(PDBS, WORKLOAD_NAMESPACE, SERVICE_NAME)["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"]) == (3, 2, 3)
    assert [evictable(p) for p in pods(plane, AGENT_NAME)] == [False] * 3
    assert [evictable(p) for p in pods(plane, SERVICE_NAME)] == [True] * 3


async def test_evictions_honour_the_budget_and_replacements_avoid_cordoned_nodes(
        plane: ControlPlane, core: client.CoreV1Api) -> None:
    await settled(plane)
    for name in NODE_NAMES[:2]:
        await asyncio.to_thread(core.patch_node, name, {"spec": {"unschedulable": True}})
    on = {p["spec"]["nodeName"]: p for p in pods(plane, SERVICE_NAME)}
    await evict(core, on["win-0001"])
    with pytest.raises(ApiException) as refused:
        await evict(core, on["win-0002"])  # the replacement is not running yet
    assert refused.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget." in refused.value.body
    assert "The disruption budget web needs 2 healthy pods and has 2 currently" in refused.value.body
    await wait_until(lambda: len(active(plane, SERVICE_NAME)) == 3, what="a replacement pod")
    placed = [p["spec"].get("nodeName") for p in active(plane, SERVICE_NAME)]
    assert placed.count("win-0003") == 2 and "win-0001" not in placed  # never onto a cordoned node
    # evicted is not gone: the pod stays bound, Terminating, until its kubelet has stopped it
    [going] = [p for p in pods(plane, SERVICE_NAME) if p["metadata"].get("deletionTimestamp")]
    assert going["spec"]["nodeName"] == "win-0001" and going["metadata"]["deletionGracePeriodSeconds"] == 30
    run_bound_pods(plane)
    await evict(core, on["win-0002"])  # allowed once the replacement runs
    assert [d.outcome for d in plane.server.disruptions.entries] == ["evicted", "refused", "evicted"]
    assert plane.server.disruptions.entries[1].node == "win-0002"


async def test_a_direct_delete_against_the_budget_is_recorded(plane: ControlPlane, core: client.CoreV1Api) -> None:
    await settled(plane)
    first, second, _ = pods(plane, SERVICE_NAME)
    await asyncio.to_thread(core.delete_namespaced_pod, first["metadata"]["name"], WORKLOAD_NAMESPACE)
    assert plane.server.disruptions.entries == []  # within the budget
    deleted = await asyncio.to_thread(core.delete_namespaced_pod, second["metadata"]["name"], WORKLOAD_NAMESPACE)
    assert deleted.metadata.name == second["metadata"]["name"]  # the pod registry returns the object
    [entry] = plane.server.disruptions.entries
    assert entry.outcome == "bypassed" and entry.pod == f"{WORKLOAD_NAMESPACE}/{second['metadata']['name']}"
    assert "needs 2 healthy pods and has 2 currently" in entry.detail


async def test_pods_of_a_deleted_node_are_collected_and_replaced(plane: ControlPlane) -> None:
    await settled(plane)
    plane.store.delete(NODES, "", "win-0003")
    await wait_until(lambda: all(p["spec"].get("nodeName") in NODE_NAMES[:2]
                                 for p in plane.store.list(PODS, None)) and len(active(plane, SERVICE_NAME)) == 3,
                     what="pods of win-0003 collected and the web pod replaced")
    assert len(pods(plane, AGENT_NAME)) == 2


async def test_a_kubelet_writes_only_the_status_of_its_own_pods(plane: ControlPlane) -> None:
    await settled(plane)
    on = {p["spec"]["nodeName"]: p for p in pods(plane, SERVICE_NAME)}
    token = plane.kubelet_token("win-0001")
    body = b'{"status": {"phase": "Running"}}'
    for name, expected in (("win-0001", 200), ("win-0002", 403)):
        path = f"/api/v1/namespaces/{WORKLOAD_NAMESPACE}/pods/{on[name]['metadata']['name']}/status"
        status, _, _ = await raw(plane, "PATCH", path, body, "application/merge-patch+json", token=token)
        assert status == expected, name
    status, listed, _ = await raw(plane, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dwin-0001", token=token)
    assert status == 200 and {p["spec"]["nodeName"] for p in listed["items"]} == {"win-0001"}


async def test_a_deleted_pod_terminates_until_its_kubelet_ends_it(plane: ControlPlane, core: client.CoreV1Api) -> None:
    """Graceful termination as the pod registry does it: marked, kept bound for the grace period, a
    second DELETE may only shorten it, an update cannot unset it, and the node's own kubelet (only
    it) deletes it for good with a grace period of 0 — with the pod's uid as precondition."""
    await settled(plane)
    on = {p["spec"]["nodeName"]: p for p in pods(plane, SERVICE_NAME)}
    name = on["win-0001"]["metadata"]["name"]
    path = f"/api/v1/namespaces/{WORKLOAD_NAMESPACE}/pods/{name}"
    marked = await asyncio.to_thread(core.delete_namespaced_pod, name, WORKLOAD_NAMESPACE, grace_period_seconds=20)
    assert marked.metadata.deletion_grace_period_seconds == 20 and marked.metadata.deletion_timestamp is not None
    longer = await asyncio.to_thread(core.delete_namespaced_pod, name, WORKLOAD_NAMESPACE)  # its own 30: not longer
    assert longer.metadata.deletion_grace_period_seconds == 20
    shorter = await asyncio.to_thread(core.delete_namespaced_pod, name, WORKLOAD_NAMESPACE, grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    await asyncio.to_thread(core.patch_namespaced_pod, name, WORKLOAD_NAMESPACE,
                            {"metadata": {"deletionTimestamp": None, "labels": {"touched": "yes"}}})
    assert plane.store.get(PODS, WORKLOAD_NAMESPACE, name)["metadata"]["deletionTimestamp"]  # set by DELETE only
    await evict(core, plane.store.get(PODS, WORKLOAD_NAMESPACE, name))  # evicting a terminating pod: a no-op
    assert plane.store.get(PODS, WORKLOAD_NAMESPACE, name)["metadata"]["deletionGracePeriodSeconds"] == 5
    final = b'{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": {"uid": "x"}}'
    status, _, _ = await raw(plane, "DELETE", path, final, token=plane.kubelet_token("win-0001"))
    assert status == 409  # another pod by that name would not be deleted
    uid = plane.store.get(PODS, WORKLOAD_NAMESPACE, name)["metadata"]["uid"]
    final = final.replace(b'"x"', f'"{uid}"'.encode())
    status, _, _ = await raw(plane, "DELETE", path, final, token=plane.kubelet_token("win-0002"))
    assert status == 403  # not its pod
    status, _, _ = await raw(plane, "DELETE", path, final, token=plane.kubelet_token("win-0001"))
    assert status == 200 and plane.store.peek(PODS, WORKLOAD_NAMESPACE, name) is None


async def test_a_pod_with_nothing_to_stop_goes_at_once(plane: ControlPlane, core: client.CoreV1Api) -> None:
    await settled(plane)
    await asyncio.to_thread(core.create_namespaced_pod, WORKLOAD_NAMESPACE,
                            {"metadata": {"name": "unbound", "labels": {"app": "x"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}], "nodeSelector": {"none": "x"}}})
    await asyncio.to_thread(core.delete_namespaced_pod, "unbound", WORKLOAD_NAMESPACE)
    assert plane.store.peek(PODS, WORKLOAD_NAMESPACE, "unbound") is None  # never scheduled: no kubelet
    name = pods(plane, SERVICE_NAME)[0]["metadata"]["name"]
    await asyncio.to_thread(core.delete_namespaced_pod, name, WORKLOAD_NAMESPACE, grace_period_seconds=0)
    assert plane.store.peek(PODS, WORKLOAD_NAMESPACE, name) is None  # grace 0: forced


async def test_a_pod_is_placed_only_where_its_node_selector_fits(plane: ControlPlane, core: client.CoreV1Api) -> None:
    await settled(plane)
    for name, node in (("here", "win-0002"), ("nowhere", "win-0009")):
        await asyncio.to_thread(core.create_namespaced_pod, WORKLOAD_NAMESPACE, {
            "metadata": {"name": name, "labels": {"app": "pinned"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "containers": [{"name": "c", "image": "i"}]}})
    await wait_until(lambda: plane.store.get(PODS, WORKLOAD_NAMESPACE, "here")["spec"].get("nodeName") == "win-0002",
                     what="the pinned pod on its node")
    await asyncio.to_thread(core.patch_node, "win-0002", {"spec": {"unschedulable": True}})
    await asyncio.to_thread(core.create_namespaced_pod, WORKLOAD_NAMESPACE, {
        "metadata": {"name": "cordoned", "labels": {"app": "pinned"}},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "win-0002"}, "containers": [{"name": "c", "image": "i"}]}})
    plane.workloads.reconcile()  # a scheduling pass that has certainly seen the pod
    plane_pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in plane.store.list(PODS, WORKLOAD_NAMESPACE)}
    assert plane_pods["nowhere"] is None and plane_pods["cordoned"] is None  # Pending: no node fits


def test_a_large_fleet_hosts_many_services_each_behind_its_own_budget() -> None:
    assert service_sizes(1) == [1] and service_sizes(SERVICE_PODS) == [SERVICE_PODS]
    assert service_names(SERVICE_PODS) == [SERVICE_NAME]  # every lab of up to 26 nodes: one service, as before
    assert service_sizes(SERVICE_PODS + 1) == [13, 13]
    assert service_sizes(999) == [25] * 39 + [24] and sum(service_sizes(999)) == 999
    assert service_names(60) == ["web-1", "web-2", "web-3"]
    kinds = [(kind.plural, obj["metadata"]["name"], obj["spec"].get("replicas")) for kind, obj in lab_workloads(60)]
    assert kinds == [("namespaces", WORKLOAD_NAMESPACE, None),
                     ("replicasets", "web-1", 20), ("poddisruptionbudgets", "web-1", None),
                     ("replicasets", "web-2", 20), ("poddisruptionbudgets", "web-2", None),
                     ("replicasets", "web-3", 20), ("poddisruptionbudgets", "web-3", None),
                     ("daemonsets", AGENT_NAME, None)]


async def test_drains_of_different_services_proceed_side_by_side(tmp_path: Path) -> None:
    names = tuple(f"win-{i:04d}" for i in range(1, SERVICE_PODS + 3))  # 27 nodes: two services
    async with workload_plane(tmp_path / "cluster", names) as plane:
        apps = service_names(len(names))
        assert apps == ["web-1", "web-2"]
        await wait_until(lambda: all(p["spec"].get("nodeName") for app in apps for p in pods(plane, app))
                         and len(pods(plane, "web-1")) + len(pods(plane, "web-2")) == len(names),
                         what="every service's pods bound")
        run_bound_pods(plane)
        await wait_until(lambda: all((plane.store.get(PDBS, WORKLOAD_NAMESPACE, app).get("status") or {})
                                     .get("disruptionsAllowed") == 1 for app in apps),
                         what="each budget to allow one disruption")
        api = config.new_client_from_config(config_file=str(plane.kubeconfig_path))
        try:
            core = client.CoreV1Api(api)
            first, second = (pods(plane, app)[:2] for app in apps)
            await evict(core, first[0])
            await evict(core, second[0])  # another service's budget: allowed at the same time
            with pytest.raises(ApiException) as refused:
                await evict(core, first[1])  # the same service's second: refused until a replacement runs
            assert refused.value.status == 429 and "The disruption budget web-1 needs" in refused.value.body
        finally:
            api.close()
        assert [d.outcome for d in plane.server.disruptions.entries] == ["evicted", "evicted", "refused"]


def test_a_generated_pod_name_already_taken_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # the random suffixes a 1,000-node lab's 2,000 pods draw collide now and then (a bench saw it)
    store = Store()
    for resource_type, obj in lab_workloads(1):
        store.create(resource_type, obj)
    controllers, agent = WorkloadControllers(store), store.scan(DAEMONSETS)[0]
    suffixes = iter(["aaaaaa", "aaaaaa", "aaaaaa", "bbbbbb"])
    monkeypatch.setattr(workloads.secrets, "token_hex", lambda n: next(suffixes))
    assert controllers._create(agent, "win-0001")["metadata"]["name"] == f"{AGENT_NAME}-aaaaaa"
    assert controllers._create(agent, "win-0002")["metadata"]["name"] == f"{AGENT_NAME}-bbbbbb"  # 2 taken draws
    # a name taken at every draw is the server's error, as kube-apiserver's after its last try
    monkeypatch.setattr(workloads.secrets, "token_hex", lambda n: "aaaaaa")
    with pytest.raises(APIError, match="already exists"):
        controllers._create(agent, "win-0003")
    assert len(store.scan(PODS)) == 2
