"""The reconciler's drain against the embedded API server: pods evicted (DaemonSet pods left), a
refused eviction retried until the budget allows it, and a drain that cannot finish times out
with the pods named, leaving the node unrebooted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from proxyfleet.harness.reconciler.draining import DrainSettings, DrainTimeout, NodeDrainer, must_move
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.controlplane.resources import PODS
from proxyfleet.simulators.controlplane.workloads import AGENT_NAME, SERVICE_NAME
from tests.support import HANG, kubelets_ending_pods, run_bound_pods, wait_until, workload_plane

NODE_NAMES = ("win-0001", "win-0002", "win-0003")


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[ControlPlane]:
    async with workload_plane(tmp_path / "cluster", NODE_NAMES) as control_plane:
        yield control_plane


@pytest.fixture
def api(plane: ControlPlane) -> AsyncIterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(plane.kubeconfig_path))
    yield api_client
    api_client.close()


def bound(plane: ControlPlane, node: str, app: str | None = None) -> list[dict[str, Any]]:
    return [p for p in plane.store.list(PODS, None) if p["spec"].get("nodeName") == node
            and (app is None or p["metadata"]["labels"].get("app") == app)]


async def ready(plane: ControlPlane) -> None:
    await wait_until(lambda: all(len(bound(plane, n)) == 2 for n in NODE_NAMES), what="two pods per node")
    run_bound_pods(plane)


async def cordon(api: client.ApiClient, *names: str) -> None:
    for name in names:
        await asyncio.to_thread(client.CoreV1Api(api).patch_node, name, {"spec": {"unschedulable": True}})


def test_what_a_drain_moves() -> None:
    owned = {"metadata": {"ownerReferences": [{"kind": "ReplicaSet", "controller": True}]}, "status": {}}
    assert must_move(owned)
    assert not must_move({"metadata": {"ownerReferences": [{"kind": "DaemonSet", "controller": True}]}})
    assert not must_move({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}})
    assert not must_move({"metadata": {}, "status": {"phase": "Succeeded"}})
    assert must_move({"metadata": {}, "status": {"phase": "Running"}})  # a bare pod goes too


async def test_a_drain_evicts_all_but_daemon_pods(plane: ControlPlane, api: client.ApiClient) -> None:
    await ready(plane)
    await cordon(api, "win-0001")
    drainer = NodeDrainer(api, DrainSettings(timeout=10, retry=0.05))
    async with kubelets_ending_pods(plane):
        assert await drainer.drain("win-0001") == 1
    assert [p["metadata"]["labels"]["app"] for p in bound(plane, "win-0001")] == [AGENT_NAME]
    assert drainer.evictions == 1 and [e.outcome for e in plane.server.disruptions.entries] == ["evicted"]


async def test_a_refused_eviction_is_retried_until_the_budget_allows(plane: ControlPlane,
                                                                     api: client.ApiClient) -> None:
    await ready(plane)
    await cordon(api, "win-0001", "win-0002")
    drainer = NodeDrainer(api, DrainSettings(timeout=30, retry=0.05))
    async with kubelets_ending_pods(plane):
        assert await drainer.drain("win-0001") == 1
        second = asyncio.create_task(drainer.drain("win-0002"))
        await wait_until(lambda: drainer.refusals >= 1, what="the second eviction to be refused")
        assert not second.done() and bound(plane, "win-0002", SERVICE_NAME)  # the budget holds it
        await wait_until(lambda: run_bound_pods(plane) > 0, what="the replacement to be scheduled and started")
        assert await asyncio.wait_for(second, 10) == 1
    assert bound(plane, "win-0002", SERVICE_NAME) == []
    outcomes = [e.outcome for e in plane.server.disruptions.entries]
    assert outcomes[0] == "evicted" and outcomes[-1] == "evicted" and "refused" in outcomes
    assert "bypassed" not in outcomes


async def test_a_drain_that_cannot_finish_times_out_naming_the_pods(plane: ControlPlane,
                                                                    api: client.ApiClient) -> None:
    await ready(plane)
    await cordon(api, *NODE_NAMES)  # nowhere for a replacement to go
    async with kubelets_ending_pods(plane):  # a drain that can finish: bounded only against a hang
        await NodeDrainer(api, DrainSettings(timeout=HANG, retry=0.05)).drain("win-0001")
    drainer = NodeDrainer(api, DrainSettings(timeout=0.5, retry=0.05))
    stuck = bound(plane, "win-0002", SERVICE_NAME)[0]["metadata"]["name"]
    with pytest.raises(DrainTimeout, match=f"drain of win-0002 timed out after 0.5s: lab-workloads/{stuck} "
                                           r"\(eviction refused\) still on the node") as failure:
        await drainer.drain("win-0002")
    assert failure.value.reason == "DrainTimeout"


async def test_evicted_is_not_gone_a_drain_waits_for_the_deletion(plane: ControlPlane,
                                                                  api: client.ApiClient) -> None:
    """No kubelet ends the evicted pod (its node hangs): the drain does not return, it times out
    naming the pod as terminating — it never reports a node drained whose pods are still there."""
    await ready(plane)
    await cordon(api, "win-0001")
    drainer = NodeDrainer(api, DrainSettings(timeout=0.5, retry=0.05))
    going = bound(plane, "win-0001", SERVICE_NAME)[0]["metadata"]["name"]
    with pytest.raises(DrainTimeout, match=f"lab-workloads/{going} \\(terminating\\) still on the node"):
        await drainer.drain("win-0001")
    assert drainer.evictions == 1 and bound(plane, "win-0001", SERVICE_NAME)[0]["metadata"]["deletionTimestamp"]
