"""Faults during a rollout. Each scenario runs on its own lab, in parallel with the others.

* A node off the network when the change arrives: the others proceed (the reconciler did not
  take it down: it does not use up maxUnavailable), and it converges with one reboot once back.
* The reconciler killed while nodes are down for their reboots, and started again: no node
  reboots twice, every node converges (the reboot owed must be remembered outside its memory).
* One instance never comes back from its reboot: the others converge within maxUnavailable
  (the stuck one keeps counting against it) and the reconciler reports it in a Warning Event.
* One instance's SSH host key replaced before a change: the reconciler refuses it and says so
  in a Warning Event; the others converge.
* The API server restarted mid-rollout with its watch history compacted (every watch gets 410
  Gone and must list again): the rollout still completes, one reboot per node.
* A second change while the first is rolling out: every node ends on the latest settings, with
  at most two reboots where the first was under way and one everywhere else.
"""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.lab import DEFAULT_NO_PROXY
from proxyfleet.scenarios.actions import join, publish_proxy


@pytest.mark.workflow("faults")
async def test_a_node_off_the_network_converges_when_it_returns(conformance: Conformance) -> None:
    await join(conformance)
    away = conformance.nodes[-1]

    async def change_while_away() -> None:
        await conformance.take_offline(away)
        await publish_proxy(conformance)

    await conformance.step("proxy added while one instance is off the network", change_while_away)
    await conformance.step("the instance is back", lambda: conformance.bring_online(away))
    conformance.assert_passed()


@pytest.mark.workflow("faults")
async def test_the_reconciler_killed_mid_reboot_resumes_without_a_second_reboot(conformance: Conformance) -> None:
    await join(conformance)
    lab = conformance.lab

    async def change_and_kill() -> None:
        await publish_proxy(conformance)
        await conformance.wait_for(lambda: any(not n.is_listening for n in conformance.nodes),
                                   "a node to go down for its reboot")
        await lab.kill_reconciler()

    await conformance.step("proxy added; the reconciler killed while a node reboots", change_and_kill)
    conformance.assert_passed()


@pytest.mark.workflow("faults")
@pytest.mark.lab(second_proxy=True)
async def test_a_second_change_during_the_rollout_ends_on_the_latest(conformance: Conformance) -> None:
    await join(conformance)
    lab = conformance.lab

    async def two_changes() -> None:
        await publish_proxy(conformance)
        await conformance.wait_for(lambda: any(not n.is_listening for n in conformance.nodes),
                                   "a node to go down for its reboot")
        await conformance.set_proxy(lab.proxy2_url, DEFAULT_NO_PROXY)

    await conformance.step("proxy added, then changed while the first rollout runs", two_changes)
    conformance.assert_passed()


@pytest.mark.workflow("faults")
async def test_a_changed_host_key_is_refused_and_reported(conformance: Conformance) -> None:
    await join(conformance)

    async def rekey_then_change() -> None:
        await conformance.replace_host_key(conformance.nodes[-1])
        await publish_proxy(conformance)

    await conformance.step("one instance's host key replaced, then proxy added", rekey_then_change)
    conformance.assert_passed()


@pytest.mark.workflow("faults")
@pytest.mark.lab(max_unavailable_floor=2, reboot_timeout=4.0)
async def test_a_node_that_never_comes_back_is_reported_and_the_rest_converge(conformance: Conformance) -> None:
    await join(conformance)

    async def change_with_one_stuck() -> None:
        conformance.hang_next_reboot(conformance.nodes[0])
        await publish_proxy(conformance)

    await conformance.step("proxy added; one instance never comes back from its reboot", change_with_one_stuck)
    conformance.assert_passed()


@pytest.mark.workflow("faults")
async def test_an_api_server_restart_mid_rollout_expires_watches_and_the_rollout_completes(
        conformance: Conformance) -> None:
    await join(conformance)
    lab = conformance.lab

    async def change_and_restart() -> None:
        await publish_proxy(conformance)
        await conformance.wait_for(lambda: any(not n.is_listening for n in conformance.nodes),
                                   "a node to go down for its reboot")
        await lab.control_plane.restart()

    await conformance.step("proxy added; the API server restarted, watches expired (410)", change_and_restart)
    conformance.assert_passed()
