"""Faults during rollouts, one fault per scenario (each on its own lab, in parallel with the
others, so a large fleet's run is as long as its longest single fault, not their sum). A fault
that needs a configured fleet starts from a cluster installed with the proxy, so it waits for no
rollout before its own.

Hosts and network (on a mixed fleet, one node of each kind off the network or rekeyed; the stuck
one is whichever node of either kind the reconciler reboots first):
* an instance off the network when the proxy is added: the others proceed (the reconciler did
  not take it down: it does not use up maxUnavailable); it converges with one reboot once back;
* an instance's SSH host key replaced before a change: the reconciler refuses it and says so in
  a Warning Event, the others converge;
* an instance that never comes back from its reboot — the first the reconciler reboots: it reports
  it in a Warning Event (the step waits its declared reboot timeout for that) and the others
  converge within maxUnavailable, which the stuck one keeps using (never more than
  maxUnavailable - 1 others down or cordoned while it is down).

The reconciler and the control plane:
* the reconciler killed while a node is down for its reboot, and started again: no node reboots
  twice (the reboot owed must be remembered outside its memory), the budget holds;
* the API server restarted mid-rollout with its history compacted (every watch gets 410 Gone
  and must list again): the rollout completes, one reboot per node;
* a second change while the first is rolling out: every node ends on the latest settings, two
  reboots only where the first was under way;
* the proxy down while a change rolls out: the settings still land, pulls through it fail saying
  why (and nothing goes direct); once it is back, pulls recover with no further reboot.
"""

import asyncio
import datetime as dt

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.lab import DEFAULT_NO_PROXY
from proxyfleet.scenarios.actions import join, one_of_each_kind, publish_proxy

OTHER_NO_PROXY = f"{DEFAULT_NO_PROXY},.partner.example"


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
async def test_an_instance_off_the_network_converges_once_back(conformance: Conformance) -> None:
    await join(conformance)
    away, each = one_of_each_kind(conformance, last=True)

    async def change_while_away() -> None:
        for node in away:
            await conformance.take_offline(node)
        await publish_proxy(conformance)

    async def back() -> None:
        for node in away:
            await conformance.bring_online(node)

    await conformance.step(f"proxy added while {each} is off the network", change_while_away)
    await conformance.step("the instance is back" if len(away) == 1 else "the instances are back", back)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
@pytest.mark.lab(install_proxy=True)
async def test_an_instance_whose_host_key_changed_is_refused(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)
    rekeyed, each = one_of_each_kind(conformance)

    async def rekey_then_change() -> None:
        for node in rekeyed:
            await conformance.replace_host_key(node)
        await conformance.set_proxy(lab.proxy_url, OTHER_NO_PROXY, https_url=lab.proxy_https_url)

    await conformance.step(f"{each}'s host key replaced, then NO_PROXY changed", rekey_then_change)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
# maxUnavailable 30 % of the nodes (at least 2): while the stuck node keeps one slot and the
# others are held in their drains, nodes are still waiting their turn when the reconciler gives up
# on the stuck one (four nodes or more) — a reconciler that frees the slot then takes one. Not a
# quarter: at 10 nodes that left one free slot, and the nine other nodes' reboots one after another
# made this the run's longest scenario (44.5 s alone, quiet) by waits no CPU shortens.
@pytest.mark.lab(install_proxy=True, max_unavailable_floor=2, max_unavailable_share=0.3, reboot_timeout=4.0)
async def test_an_instance_that_never_comes_back_keeps_its_slot(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)

    async def change_with_one_stuck() -> None:
        # Whichever node the reconciler reboots first never comes back. From then until the
        # reconciler has reported it (once its reboot timeout is over), every drain waits, so the
        # rest of the rollout is still to come when the reconciler gives up on the stuck node: it
        # must keep counting it against maxUnavailable, on any machine.
        conformance.hang_first_reboot()
        rebooting = asyncio.ensure_future(conformance.wait_for_a_reboot())
        await conformance.set_proxy(lab.proxy_url, OTHER_NO_PROXY, https_url=lab.proxy_https_url)
        stuck = await rebooting
        async with conformance.drains_held():
            await conformance.wait_for_report(stuck, since=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))

    await conformance.step("NO_PROXY changed; one instance never comes back from its reboot", change_with_one_stuck)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
async def test_the_reconciler_killed_mid_rollout_reboots_no_node_twice(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)

    async def change_and_kill() -> None:
        rebooting = asyncio.ensure_future(conformance.wait_for_a_reboot())
        await publish_proxy(conformance)
        await rebooting
        await lab.kill_reconciler()

    await conformance.step("proxy added; the reconciler killed while a node reboots", change_and_kill)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
@pytest.mark.lab(install_proxy=True)
async def test_the_api_server_restarted_mid_rollout_with_its_history_compacted(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)

    async def change_and_restart() -> None:
        rebooting = asyncio.ensure_future(conformance.wait_for_a_reboot())
        await conformance.set_proxy(lab.proxy_url, OTHER_NO_PROXY, https_url=lab.proxy_https_url)
        await rebooting
        await lab.control_plane.restart()

    await conformance.step("NO_PROXY changed; the API server restarted, watches expired (410)", change_and_restart)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
@pytest.mark.lab(install_proxy=True, second_proxy=True)
async def test_a_second_change_while_the_first_rolls_out_lands(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)

    async def two_changes() -> None:
        rebooting = asyncio.ensure_future(conformance.wait_for_a_reboot())
        await conformance.set_proxy(lab.proxy_url, OTHER_NO_PROXY, https_url=lab.proxy_https_url)
        await rebooting
        await conformance.set_proxy(lab.proxy2_url, OTHER_NO_PROXY)

    await conformance.step("NO_PROXY changed, then the proxy changed while that rolls out", two_changes)
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("faults")
@pytest.mark.lab(install_proxy=True, second_proxy=True)
async def test_a_change_while_the_proxy_is_down_lands_and_pulls_recover(conformance: Conformance) -> None:
    lab = conformance.lab
    assert lab.proxy2 is not None
    proxy2 = lab.proxy2
    await join(conformance)

    async def change_with_the_proxy_down() -> None:
        # The lab's second proxy (its own: a vendor's, used by URL, cannot be stopped) is down,
        # and the change moves the cluster onto it.
        await lab.take_proxy_down(proxy2)
        await conformance.set_proxy(lab.proxy2_url, OTHER_NO_PROXY)

    await conformance.step("proxy and NO_PROXY changed while the proxy is down", change_with_the_proxy_down)
    await conformance.step("the proxy is back", lambda: lab.bring_proxy_up(proxy2))
    conformance.assert_passed()
