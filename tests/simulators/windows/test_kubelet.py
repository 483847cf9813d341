"""Simulated kubelets against the embedded control plane, through the lab network and the real
proxy: Ready while they can reach the API, NotReady when the proxy settings send them into the
MITM proxy (whose certificate they do not trust), Ready again when fixed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes import client

from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.controlplane.store import StoredEvent
from proxyfleet.simulators.controlplane.workloads import SERVICE_NAME, WORKLOAD_NAMESPACE
from proxyfleet.simulators.kubelet import same_status
from proxyfleet.simulators.windows.node import WindowsNode
from tests.support import run_powershell, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")
KUBELET_KEY = r"HKLM:\SYSTEM\CurrentControlSet\Services\kubelet"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=2, heartbeat=0.2, node_grace=1.5)) as running:
        yield running


async def ready(lab: Lab, node: WindowsNode) -> str | None:
    try:
        got = await lab.call(client.CoreV1Api(lab.api()).read_node, node.name)
    except client.exceptions.ApiException:
        return None
    conditions: list[Any] = got.status.conditions or []
    return next((c.status for c in conditions if c.type == "Ready"), None)


async def set_kubelet_environment(lab: Lab, node: WindowsNode, entries: list[str]) -> None:
    values = ",".join(f"'{e}'" for e in entries) or ""
    result = await run_powershell(lab.fleet, node, f"New-ItemProperty -Path {KUBELET_KEY} -Name Environment "
                                           f"-PropertyType MultiString -Value @({values}) -Force | Out-Null;"
                                           "Restart-Service kubelet -Force")
    assert result.exit_status == 0, result.stderr


async def test_nodes_register_and_stay_ready(lab: Lab) -> None:
    for node in lab.fleet.nodes:
        await wait_until(lambda n=node: ready_is(lab, n, "True"),
                         what=f"{node.name} Ready")
    got = await lab.call(client.CoreV1Api(lab.api()).read_node, lab.fleet.nodes[0].name)
    assert got.metadata.labels["kubernetes.io/os"] == "windows"
    assert got.status.node_info.operating_system == "windows"
    assert [a.address for a in got.status.addresses if a.type == "InternalIP"] == [lab.fleet.nodes[0].address]
    lease = await lab.call(client.CoordinationV1Api(lab.api()).read_namespaced_lease,
                           lab.fleet.nodes[0].name, "kube-node-lease")
    assert lease.spec.holder_identity == lab.fleet.nodes[0].name


async def test_a_ready_node_is_not_rewritten_at_every_heartbeat(lab: Lab) -> None:
    """Once Ready, a kubelet renews its Lease each heartbeat but writes its Node only when its
    status changed (or once per report interval): Node watchers are not flooded at scale."""
    for node in lab.fleet.nodes:
        await wait_until(lambda n=node: ready_is(lab, n, "True"), what=f"{node.name} Ready")
    writes: list[str] = []
    rewrites: list[str] = []  # a Ready Node written with nothing changed but times

    def observe(event: StoredEvent) -> None:
        writes.append(event.key[1])
        if event.key[1] == "nodes" and event.old is not None and same_status(event.old.get("status") or {},
                                                                               event.new.get("status") or {}):
            rewrites.append(event.new["metadata"]["name"])

    lab.control_plane.store.observers.append(observe)
    kubelets = [n.kubelet for n in lab.fleet.nodes if n.kubelet is not None]
    start = [k.state.heartbeats for k in kubelets]
    # five status periods (heartbeat 0.2 s, status every 1 s) on every node
    await wait_until(lambda: all(k.state.heartbeats >= s + 25 for k, s in zip(kubelets, start, strict=True)), what="25 more heartbeats on every node")
    assert writes.count("leases") >= 25 * len(kubelets)
    assert rewrites == []


async def test_kubelets_report_their_pods_running_over_the_api(lab: Lab) -> None:
    """The lab's workloads land one pod per node and each node's kubelet reports its own running
    (over HTTPS, with its own identity); a pod deleted is replaced and reported running too."""
    core = client.CoreV1Api(lab.api())
    addresses = {n.name: n.address for n in lab.fleet.nodes}

    async def running() -> list[Any]:
        listed = await lab.call(core.list_namespaced_pod, WORKLOAD_NAMESPACE)
        return [p for p in listed.items if p.status.phase == "Running"]

    expected = 2 * len(addresses) - 1  # a web pod on all nodes but one, an agent on every node

    def counted() -> int:
        return sum(n.kubelet.state.pods_started for n in lab.fleet.nodes if n.kubelet is not None)

    async def all_running() -> bool:  # each kubelet counts its start once its status PATCH is answered
        return await _count(running(), expected) and counted() == expected

    await wait_until(all_running, what="every pod running, each started once by its kubelet")
    for pod in await running():
        assert pod.status.host_ip == addresses[pod.spec.node_name]  # reported by that node's kubelet
        assert pod.status.container_statuses[0].ready
    started = counted()
    victim = next(p for p in await running() if p.metadata.labels["app"] == SERVICE_NAME)
    host = next(n for n in lab.fleet.nodes if n.name == victim.spec.node_name)
    assert host.kubelet is not None
    ended = host.kubelet.state.pods_terminated
    deleted = await lab.call(core.delete_namespaced_pod, victim.metadata.name, WORKLOAD_NAMESPACE)
    assert deleted.metadata.deletion_timestamp is not None  # Terminating: its kubelet has to stop it first

    async def gone() -> bool:
        names = {p.metadata.name for p in (await lab.call(core.list_namespaced_pod, WORKLOAD_NAMESPACE)).items}
        return victim.metadata.name not in names

    kubelet = host.kubelet

    async def ended_by_its_kubelet() -> bool:
        # The server removes the pod when the kubelet's DELETE arrives; the kubelet counts it only
        # once the reply is back, so the two are awaited together rather than one after the other.
        return await gone() and kubelet.state.pods_terminated == ended + 1

    await wait_until(ended_by_its_kubelet, what="the deleted pod ended by its kubelet")

    async def replaced() -> bool:
        return await _count(running(), expected) and counted() == started + 1

    await wait_until(replaced, what="the replacement started by a kubelet and running")


async def _count(pods: Any, expected: int) -> bool:
    return len(await pods) == expected


async def ready_is(lab: Lab, node: WindowsNode, expected: str) -> bool:
    return await ready(lab, node) == expected


async def test_kubelet_forced_through_the_proxy_goes_not_ready_and_recovers(lab: Lab) -> None:
    assert lab.proxy is not None
    node = lab.fleet.nodes[1]
    await wait_until(lambda: ready_is(lab, node, "True"), what="Ready")
    api_host = lab.control_plane.plan.api_internal_host
    await set_kubelet_environment(lab, node, [f"HTTPS_PROXY={lab.proxy_url}", "NO_PROXY=.svc,.cluster.local"])
    await wait_until(lambda: ready_is(lab, node, "Unknown"),
                     what="NotReady")
    assert node.kubelet is not None
    kubelet = node.kubelet
    # its own error says why (the lease may lapse before its first request through the proxy fails)
    await wait_until(lambda: "certificate" in (kubelet.state.last_error or ""),
                     what="the kubelet's TLS error")
    proxy = lab.proxy

    def rejected() -> list[dict[str, object]]:
        return [f for f in proxy.flows() if f["client"] == node.address and f["kind"] == "tls-failed"]

    # mitmdump records the failed handshake once the client has given up: after the kubelet's error
    await wait_until(lambda: bool(rejected()), what="the proxy's record of the refused handshake")
    assert rejected()[-1]["host"] == api_host
    await set_kubelet_environment(lab, node, [f"HTTPS_PROXY={lab.proxy_url}", f"NO_PROXY=.svc,{api_host}"])
    await wait_until(lambda: ready_is(lab, node, "True"), what="Ready again")


async def test_a_stopped_kubelet_goes_not_ready(lab: Lab) -> None:
    node = lab.fleet.nodes[0]
    await wait_until(lambda: ready_is(lab, node, "True"), what="Ready")
    assert (await run_powershell(lab.fleet, node, "Stop-Service kubelet -Force")).exit_status == 0
    await wait_until(lambda: ready_is(lab, node, "Unknown"),
                     what="NotReady")
    assert (await run_powershell(lab.fleet, node, "Start-Service kube-proxy")).exit_status == 0  # starts kubelet too
    await wait_until(lambda: ready_is(lab, node, "True"), what="Ready again")
