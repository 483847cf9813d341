"""A simulated Linux node's kubelet against the lab's control plane, through the lab's network and
its real proxy: it runs while kubelet.service does, with that process's environment (the unit's
drop-ins, read at daemon-reload), registers a Linux Node, and goes NotReady when a drop-in sends
it into the MITM proxy — the same kubelet as a Windows node's, judged by the same API."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncssh
import certifi
import pytest
import pytest_asyncio
from kubernetes import client

from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.kubelet import KubeletSettings
from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import RHCOS_NODE
from tests.simulators.linux.sessions import run_on
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
pytestmark = [pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}"),
              pytest.mark.asyncio(loop_scope="module")]
KEY = asyncssh.generate_private_key("ssh-ed25519")
DROP_IN = "/etc/systemd/system/kubelet.service.d/10-proxy.conf"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=1, heartbeat=0.2, node_grace=1.5)) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LinuxNode]:
    kubelet = KubeletSettings(api_url=lab.control_plane.internal_url, token=lab.control_plane.kubelet_token,
                              ca_pem=lab.control_plane.ca_pem, lease_interval=0.2, status_interval=1.0,
                              lease_duration=2)
    running = LinuxNode(LinuxNodeConfig(
        "rhcos-worker-1", "127.10.200.1", 0, tmp_path_factory.mktemp("linux-kubelet") / "node",
        asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()], RHCOS_NODE,
        Path(certifi.where()).read_bytes(), network=lab.network, kubelet=kubelet))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


run = functools.partial(run_on, key=KEY)


async def read_node(lab: Lab, name: str) -> Any:
    try:
        return await lab.call(client.CoreV1Api(lab.api()).read_node, name)
    except client.exceptions.ApiException:
        return None


async def ready_is(lab: Lab, name: str, expected: str) -> bool:
    got = await read_node(lab, name)
    conditions = (got.status.conditions or []) if got is not None else []
    return next((c.status for c in conditions if c.type == "Ready"), None) == expected


async def kubelet_environment(node: LinuxNode, lines: list[str]) -> None:
    text = "".join(f"Environment={line}\\n" for line in lines)
    done = await run(node, f"printf '[Service]\\n{text}' > {DROP_IN} && systemctl daemon-reload && "
                           "systemctl restart kubelet")
    assert done.exit_status == 0, done.stderr


async def test_the_kubelet_registers_a_linux_node_and_stays_ready(lab: Lab, node: LinuxNode) -> None:
    await wait_until(lambda: ready_is(lab, node.config.name, "True"), what="the Linux node Ready")
    got = await read_node(lab, node.config.name)
    assert got.metadata.labels["kubernetes.io/os"] == "linux"
    assert got.metadata.labels["node.openshift.io/os_id"] == "rhcos"
    info = got.status.node_info
    assert (info.operating_system, info.container_runtime_version) == ("linux", "cri-o://1.30.6")
    assert info.boot_id == node.boots[-1].boot_id
    assert [a.address for a in got.status.addresses if a.type == "InternalIP"] == [node.config.address]


async def test_a_drop_in_that_sends_the_kubelet_into_the_proxy_makes_it_not_ready(lab: Lab, node: LinuxNode) -> None:
    assert lab.proxy is not None and node.kubelet is not None
    await wait_until(lambda: ready_is(lab, node.config.name, "True"), what="Ready")
    api_host = lab.control_plane.plan.api_internal_host
    # written but not reloaded: the running kubelet, and a restart, keep the old environment
    unreloaded = await run(node, f"mkdir -p {DROP_IN.rsplit('/', 1)[0]} && printf '[Service]\\n"
                                 f"Environment=HTTPS_PROXY={lab.proxy_url}\\n' > {DROP_IN} && systemctl restart kubelet")
    assert "Run 'systemctl daemon-reload'" in unreloaded.stderr
    assert "HTTPS_PROXY" not in node.model.systemd.running["kubelet.service"].environment
    await kubelet_environment(node, [f"HTTPS_PROXY={lab.proxy_url}", "NO_PROXY=.svc,.cluster.local"])
    kubelet = node.kubelet
    await wait_until(lambda: "certificate" in (kubelet.state.last_error or ""), what="the kubelet's TLS error")
    await wait_until(lambda: ready_is(lab, node.config.name, "Unknown"), what="NotReady")
    through = [r for r in node.model.egress.records if r.client == "kubelet"]
    assert through and through[-1].proxy == f"{lab.proxy_url.split('//')[1]}" and through[-1].host == api_host
    await kubelet_environment(node, [f"HTTPS_PROXY={lab.proxy_url}", f"NO_PROXY=.svc,{api_host}"])
    await wait_until(lambda: ready_is(lab, node.config.name, "True"), what="Ready again")


async def test_a_stopped_kubelet_goes_not_ready_and_a_reboot_brings_it_back(lab: Lab, node: LinuxNode) -> None:
    await wait_until(lambda: ready_is(lab, node.config.name, "True"), what="Ready")
    assert (await run(node, "systemctl stop kubelet")).exit_status == 0
    await wait_until(lambda: ready_is(lab, node.config.name, "Unknown"), what="NotReady")
    boots = len(node.boots)
    await run(node, "systemctl reboot")
    await wait_until(lambda: len(node.boots) > boots and node.is_listening, what="the node back from its reboot")
    await wait_until(lambda: ready_is(lab, node.config.name, "True"), what="Ready after the reboot")
    got = await read_node(lab, node.config.name)
    assert got.status.node_info.boot_id == node.boots[-1].boot_id
