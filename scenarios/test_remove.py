"""Workflow 3b: the proxy is removed, then the trusted CA: egress is direct again and nothing
is left behind; removing the CA of a proxy that is already gone changes nothing on the nodes."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import add_proxy, join, remove_proxy


@pytest.mark.rollouts(2)
@pytest.mark.workflow("remove")
async def test_proxy_then_trusted_ca_removed(conformance: Conformance) -> None:
    await join(conformance)
    await add_proxy(conformance)
    await remove_proxy(conformance)
    await conformance.step("trustedCA removed", lambda: conformance.set_proxy("", trusted_ca=None))
    conformance.assert_passed()
