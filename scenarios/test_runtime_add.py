"""Workflow 2: nodes run in a proxy-less cluster; the administrator adds the proxy and its CA.
One instance is cordoned for maintenance when the proxy arrives: its reboot must not end that
cordon, and it counts only when it is down."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import add_proxy, join


@pytest.mark.workflow("runtime-add")
async def test_proxy_added_at_runtime(conformance: Conformance) -> None:
    await join(conformance)
    await conformance.step("an instance cordoned for maintenance",
                           lambda: conformance.cordon(conformance.addresses[-1:]))
    await add_proxy(conformance)
    conformance.assert_passed()
