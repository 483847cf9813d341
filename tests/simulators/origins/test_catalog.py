"""The standard origins behind the corporate egress firewall: internet origins accept only the
proxy's egress address (a direct attempt is refused and logged), intranet ones are reached directly."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.origins.catalog import (
    INTRANET_REGISTRY,
    INTRANET_REGISTRY_IP,
)
from tests.simulators.traffic import (
    TrafficLab,
    configure_containerd,
)
from tests.support import run_powershell

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_no_proxy_registry_is_reached_directly(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await configure_containerd(lab, node, proxy=lab.proxy_url,
                               no_proxy=f"{INTRANET_REGISTRY},{INTRANET_REGISTRY_IP}", trust_mitm=True)
    before = len(lab.proxy.flows())
    for reference in (f"{INTRANET_REGISTRY}/corp/agent:1.0", f"{INTRANET_REGISTRY_IP}/openshift/windows-test:latest"):
        result = await run_powershell(lab.fleet, node, f"crictl pull {reference}")
        assert result.exit_status == 0, result.stderr
    sources = {r.source for r in lab.origins.access_log(INTRANET_REGISTRY)}
    assert sources == {node.address}
    assert not [f for f in lab.proxy.flows()[before:] if f["host"] in (INTRANET_REGISTRY, INTRANET_REGISTRY_IP)]


async def test_bypassing_the_proxy_for_the_internet_is_refused_and_logged(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[2]
    await configure_containerd(lab, node, proxy=None, trust_mitm=False)
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/library/pause:3.9")
    assert result.exit_status == 1
    assert "read: connection reset by peer" in result.stderr
    violations = [v for v in lab.origins.violations() if v.source == node.address]
    assert violations and violations[-1].origin == "internet-registry"
