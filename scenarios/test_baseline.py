"""The non-proxied baseline, on an open network (no egress firewall): without a proxy everything
works and nothing proxy-related appears, also after the reconciler has had time to resync."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import join


@pytest.mark.rollouts(0)  # no rollout at all: the shortest scenario
@pytest.mark.workflow("baseline")
@pytest.mark.lab(egress_firewall=False)  # a network without a proxy lets nodes out directly
async def test_no_proxy_nothing_changes(conformance: Conformance) -> None:
    await join(conformance)
    await conformance.step("nothing changes")
    conformance.assert_passed()
