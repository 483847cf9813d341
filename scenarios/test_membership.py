"""Instances joining after a change get the current settings; an instance removed from
windows-instances is cleaned (its variables and the certificates it was given removed)."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import add_proxy, change_proxy, join, last_of_each_kind


@pytest.mark.rollouts(2)
@pytest.mark.workflow("join-after-change")
# installed with the first proxy, changed to the second: a late instance must get the second
@pytest.mark.lab(install_proxy=True, second_proxy=True)
async def test_an_instance_added_after_a_change_gets_the_current_settings(conformance: Conformance) -> None:
    late = last_of_each_kind(conformance)
    if not late:
        pytest.skip("needs at least two nodes of a kind")
    await join(conformance, [n for n in conformance.every_node if n not in late])
    await change_proxy(conformance, conformance.lab.proxy2_url)
    await join(conformance, late, name="a new instance joins")
    conformance.assert_passed()


@pytest.mark.workflow("deconfigure")
async def test_an_instance_removed_from_windows_instances_is_cleaned(conformance: Conformance) -> None:
    leaving = last_of_each_kind(conformance)
    if not leaving:
        pytest.skip("needs at least two nodes of a kind")
    await join(conformance)
    await add_proxy(conformance)
    await conformance.step("an instance is removed", lambda: conformance.remove_instances(leaving),
                           deconfigure=leaving)
    conformance.assert_passed()
