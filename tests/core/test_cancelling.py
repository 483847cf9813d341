"""Stopping tasks and waiting for events without losing the caller's own cancellation (Ctrl-C)."""

from __future__ import annotations

import asyncio

import pytest

from proxyfleet.core.cancelling import stop_task, stop_tasks, wait_until


async def test_stop_task_cancels_and_waits_until_the_task_has_ended() -> None:
    cleaned = asyncio.Event()

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # its cleanup takes a turn of the loop
            cleaned.set()

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)
    await stop_task(task)
    assert task.cancelled() and cleaned.is_set()
    await stop_task(None)  # nothing to stop


async def test_an_error_the_task_ended_with_is_raised() -> None:
    async def broken() -> None:
        raise ValueError("broken before it was stopped")

    task = asyncio.create_task(broken())
    await asyncio.wait([task])
    with pytest.raises(ValueError, match="broken before"):
        await stop_task(task)


async def test_the_callers_own_cancellation_while_it_waits_is_not_swallowed() -> None:
    # ``task.cancel(); with suppress(CancelledError): await task`` loses this one: Ctrl-C reaches a
    # run as a single cancellation of its main task, and the run would go on to its deadline.
    release = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()

    workers = [asyncio.create_task(slow_to_stop()) for _ in range(2)]
    await asyncio.sleep(0)
    caller = asyncio.create_task(stop_tasks(workers))
    await asyncio.sleep(0)
    caller.cancel()  # while it waits for the workers
    await asyncio.sleep(0)
    release.set()
    await asyncio.wait([caller, *workers])
    assert caller.cancelled()
    assert all(worker.cancelled() for worker in workers)


async def test_wait_until_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert not await wait_until(event, 0.01)
    asyncio.get_running_loop().call_soon(event.set)
    assert await wait_until(event, 60)
    assert await wait_until(event, 0)  # already set: no wait


async def test_a_cancellation_that_arrives_as_the_event_is_set_is_raised() -> None:
    # The same turn of the loop sets the event and cancels the waiter: ``asyncio.wait_for`` on 3.11
    # returns normally here (CPython gh-86296), which made a 100-node run ignore Ctrl-C.
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_until(event, 60))
    await asyncio.sleep(0)
    event.set()
    waiter.cancel()
    await asyncio.wait([waiter])
    assert waiter.cancelled()


def test_a_keyboard_interrupt_a_task_ended_with_is_not_raised_again_when_it_is_stopped() -> None:
    """asyncio raised it out of the loop when it happened; raising it again at teardown cut the
    teardown of a 1,000-node lab short (click's "Aborted!", the reports never written)."""
    loop = asyncio.new_event_loop()
    try:
        async def interrupted() -> None:
            raise KeyboardInterrupt

        task = loop.create_task(interrupted())
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(task)
        loop.run_until_complete(stop_task(task))  # nothing raised: the teardown goes on
    finally:
        loop.close()
