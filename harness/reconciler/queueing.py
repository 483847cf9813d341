"""A work queue in the controller-runtime style: a key is queued at most once, processed by one
worker at a time (a change that arrives meanwhile re-queues it), different keys in parallel up to
the number of workers, and a key can come back after a delay (backoff, resync)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from proxyfleet.core.cancelling import stop_tasks

log = logging.getLogger(__name__)
Handler = Callable[[str], Awaitable[float | None]]  # returns a requeue delay, or None


class WorkQueue:
    def __init__(self, handler: Handler, workers: int, error_delay: float = 5.0) -> None:
        self.handler = handler
        self.workers = workers
        self.error_delay = error_delay  # requeue delay after the handler raised
        # asyncio.Queue rather than a Condition: its get() is safe to cancel with many waiters
        # (3.11's Condition/Lock can lose a wake-up when several waiters are cancelled at once).
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.processed = 0
        self._stopping = False

    def add(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds. A key already waiting keeps the *earlier* of its
        two ready times (client-go's AddAfter), so a change that arrives while a node sits in
        backoff is handled after the short settle delay, not after the backoff."""
        if key in self._queued:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        waiting = self._timers.get(key)
        if waiting is not None:
            if waiting.when() <= loop.time() + delay:
                return
            waiting.cancel()
        self._timers[key] = loop.call_later(delay, self._timer_fired, key)

    def _timer_fired(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def start(self) -> None:
        self._tasks = [asyncio.get_running_loop().create_task(self._work(), name=f"reconcile worker {i}")
                       for i in range(self.workers)]

    async def stop(self) -> None:
        self._stopping = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await stop_tasks(self._tasks)
        self._tasks = []

    @property
    def idle(self) -> bool:
        return self._queue.empty() and not self._processing

    async def _next(self) -> str:
        key = await self._queue.get()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    async def _work(self) -> None:
        # The flag ends the loop even if a library swallowed the cancellation mid-handler.
        while not self._stopping:
            key = await self._next()
            delay: float | None = None
            try:
                delay = await self.handler(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reconciling %s failed unexpectedly", key)
                delay = self.error_delay
            finally:
                self._processing.discard(key)
                self.processed += 1
            if key in self._dirty:
                self._dirty.discard(key)
                self.add(key)
            elif delay is not None:
                self.add_after(key, delay)
