"""Workflow 1: the proxy and its CA are in the install-config; instances join configured."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import join


@pytest.mark.workflow("install-time")
@pytest.mark.lab(install_proxy=True)
async def test_instances_join_a_cluster_installed_with_a_proxy(conformance: Conformance) -> None:
    await join(conformance)
    conformance.assert_passed()


@pytest.mark.workflow("install-time")
@pytest.mark.lab(install_proxy=True, linux_bootstrap="capi")
async def test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data(conformance: Conformance) -> None:
    """The Linux nodes are CAPI machines (Debian): their first boot's cloud-init wrote the proxy
    drop-ins from the Secret cluster-apps-operator renders, and the CA. They are judged as members
    configured since boot, handed to no reconciler; the Windows nodes join through it meanwhile."""
    await conformance.add_bootstrapped(conformance.linux_nodes)
    await join(conformance, conformance.nodes, name="instances join beside CAPI machines")
    conformance.assert_passed()
