"""Workflow 1: the proxy and its CA are in the install-config; instances join configured."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import join


@pytest.mark.workflow("install-time")
@pytest.mark.lab(install_proxy=True)
async def test_instances_join_a_cluster_installed_with_a_proxy(conformance: Conformance) -> None:
    await join(conformance)
    conformance.assert_passed()
