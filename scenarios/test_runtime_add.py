"""Workflow 2: nodes run in a proxy-less cluster; the administrator adds the proxy and its CA."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import add_proxy, join


@pytest.mark.workflow("runtime-add")
async def test_proxy_added_at_runtime(conformance: Conformance) -> None:
    await join(conformance)
    await add_proxy(conformance)
    conformance.assert_passed()
