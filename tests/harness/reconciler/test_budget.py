"""DisruptionBudget: reboots, unreachable instances and reboots the cluster records (from before a
restart) all count against maxUnavailable; a waiting reboot starts when a slot frees."""

import asyncio

from proxyfleet.harness.reconciler.budget import DisruptionBudget
from tests.support import wait_until


async def test_a_reboot_waits_for_a_free_slot() -> None:
    budget = DisruptionBudget(1)
    order: list[str] = []
    first_in = asyncio.Event()
    release = asyncio.Event()

    async def first() -> None:
        async with budget.reboot("a"):
            order.append("a in")
            first_in.set()
            await release.wait()
        order.append("a out")

    async def second() -> None:
        await first_in.wait()
        async with budget.reboot("b"):
            order.append("b in")

    tasks = [asyncio.create_task(first()), asyncio.create_task(second())]
    await first_in.wait()
    await asyncio.sleep(0)  # let the second reach the budget
    assert order == ["a in"] and budget.rebooting == {"a"}
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["a in", "a out", "b in"]


async def test_instances_that_did_not_come_back_use_up_the_budget_until_they_answer() -> None:
    budget = DisruptionBudget(2)
    await budget.reachable("x", False)
    assert budget.unavailable() == 1
    async with budget.reboot("a"):
        assert budget.unavailable() == 2
        waiting = asyncio.create_task(_enter(budget, "b"))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # x and a use both slots
        await budget.reachable("x", True)
        await asyncio.wait_for(waiting, 5)


async def test_reboots_recorded_in_the_cluster_count_and_are_looked_at_again() -> None:
    recorded = {"p"}
    budget = DisruptionBudget(1, lambda: set(recorded))
    assert budget.unavailable() == 1 and budget.unavailable(besides="p") == 0
    waiting = asyncio.create_task(_enter(budget, "b"))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    recorded.clear()  # the restarted reconciler verified p: no notification, found on the next look
    await asyncio.wait_for(waiting, 5)


async def test_a_node_never_waits_for_itself() -> None:
    budget = DisruptionBudget(1, lambda: {"a"})
    await budget.reachable("a", False)
    await asyncio.wait_for(_enter(budget, "a"), 5)
    assert "a" not in budget.unreachable  # reachable again: it is being rebooted


async def _enter(budget: DisruptionBudget, address: str) -> None:
    async with budget.reboot(address):
        pass


async def test_a_freed_slot_wakes_one_waiter_not_every_waiter() -> None:
    # At 1,000 nodes hundreds of reboots wait; each one woken counts the fleet's unavailable nodes.
    budget = DisruptionBudget(2)
    counts: list[str] = []
    original = budget.unavailable

    def counting(besides: str = "") -> int:
        counts.append(besides)
        return original(besides)

    budget.unavailable = counting  # type: ignore[method-assign]
    release = {name: asyncio.Event() for name in ["a", "b", *(f"w{i}" for i in range(20))]}
    admitted: list[str] = []

    async def reboot(name: str) -> None:
        async with budget.reboot(name):
            admitted.append(name)
            await release[name].wait()

    tasks = [asyncio.create_task(reboot(name)) for name in release]
    await wait_until(lambda: admitted == ["a", "b"] and len(counts) >= 22, what="every waiter at the budget")
    counts.clear()
    release["a"].set()
    await wait_until(lambda: len(admitted) == 3, what="one waiter admitted")
    for _ in range(5):
        await asyncio.sleep(0)  # any other waiter woken would count now
    assert len(counts) <= 3, counts  # the release's own count, the admitted waiter's, no more
    for name in release:  # every waiter still gets its turn
        release[name].set()
    await asyncio.gather(*tasks)
    assert sorted(admitted) == sorted(release)
