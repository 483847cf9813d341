"""The work queue's contract (client-go's): one entry per key, never two workers on one key, a
key changed while processed is processed again, and a delayed key keeps its earlier ready time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from proxyfleet.harness.reconciler.queueing import WorkQueue
from tests.support import wait_until


class Recorder:
    """A handler that records calls and can be held inside a key's processing."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.active: dict[str, int] = {}
        self.most_at_once: dict[str, int] = {}
        self.gates: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}
        self.delays: dict[str, float | None] = {}

    async def __call__(self, key: str) -> float | None:
        self.calls.append(key)
        self.active[key] = self.active.get(key, 0) + 1
        self.most_at_once[key] = max(self.most_at_once.get(key, 0), self.active[key])
        self.entered.setdefault(key, asyncio.Event()).set()
        gate = self.gates.get(key)
        if gate is not None:
            await gate.wait()
        self.active[key] -= 1
        return self.delays.pop(key, None)


@pytest.fixture
async def queue() -> AsyncIterator[tuple[WorkQueue, Recorder]]:
    recorder = Recorder()
    work = WorkQueue(recorder, workers=4)
    work.start()
    yield work, recorder
    await work.stop()


async def test_a_key_is_queued_once(queue: tuple[WorkQueue, Recorder]) -> None:
    work, recorder = queue
    recorder.gates["other"] = asyncio.Event()
    for _ in range(5):
        work.add("a")
    await wait_until(lambda: work.idle, what="the queue to drain")
    assert recorder.calls.count("a") == 1


async def test_a_key_changed_while_processed_is_processed_again_never_concurrently(
        queue: tuple[WorkQueue, Recorder]) -> None:
    work, recorder = queue
    recorder.gates["a"] = asyncio.Event()
    work.add("a")
    await wait_until(lambda: "a" in recorder.entered and recorder.entered["a"].is_set(), what="processing")
    work.add("a")  # arrives while a worker holds "a"
    work.add("a")
    work.add("b")  # other keys go on in parallel
    await wait_until(lambda: "b" in recorder.calls, what="b processed while a is held")
    recorder.gates["a"].set()
    await wait_until(lambda: recorder.calls.count("a") == 2 and work.idle, what="a processed again")
    assert recorder.most_at_once["a"] == 1


async def test_a_handler_delay_requeues_the_key(queue: tuple[WorkQueue, Recorder]) -> None:
    work, recorder = queue
    recorder.delays["a"] = 0.01
    work.add("a")
    await wait_until(lambda: recorder.calls.count("a") == 2, what="the requeue after the delay")


async def test_add_after_keeps_the_earlier_ready_time(queue: tuple[WorkQueue, Recorder]) -> None:
    work, recorder = queue
    work.add_after("backoff", 3600)  # a node in a long backoff...
    work.add_after("backoff", 0.01)  # ...then a cluster change: it must not wait an hour
    await wait_until(lambda: "backoff" in recorder.calls, what="the earlier ready time")
    work.add_after("settle", 0.01)
    work.add_after("settle", 3600)  # a later request never postpones an earlier one
    await wait_until(lambda: "settle" in recorder.calls, what="the first ready time to stand")
    assert recorder.calls.count("backoff") == recorder.calls.count("settle") == 1


async def test_add_cancels_a_pending_delay(queue: tuple[WorkQueue, Recorder]) -> None:
    work, recorder = queue
    work.add_after("a", 3600)
    work.add("a")
    await wait_until(lambda: "a" in recorder.calls and work.idle, what="immediate processing")
    assert recorder.calls == ["a"]


async def test_a_failing_handler_is_retried() -> None:
    attempts: list[str] = []

    async def flaky(key: str) -> float | None:
        attempts.append(key)
        if len(attempts) == 1:
            raise RuntimeError("boom")
        return None

    work = WorkQueue(flaky, workers=1, error_delay=0.01)
    work.start()
    try:
        work.add("a")
        await wait_until(lambda: len(attempts) == 2, what="the retry after an error")
    finally:
        await work.stop()
