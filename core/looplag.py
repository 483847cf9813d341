"""How late an event loop has been: the lab's own measure of its starvation (DESIGN.md §10).

Every process of the lab runs one ``LagMonitor`` on its event loop: a task that asks to wake every
``interval`` seconds and records how much later than asked it woke. Whatever else that loop serves
— simulated kubelets renewing their leases, the lifecycle controller watching them, the judge's
deadlines, the reference reconciler — was held up at least that long, because nothing runs on a
loop between two of its turns. A busy machine (another CI job, a CPU burner beside the run) shows
up here as lag, and the lab counts it against its own timings instead of against a reconciler.

``stalled(since, until)`` is how long the loop could not run between two moments (the sum of the
lag it measured then), ``worst(since)`` the longest single stall. Times are ``time.monotonic()``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

INTERVAL = 0.05  # seconds between wake-ups asked for
FLOOR = 0.01  # lag below this is the loop's ordinary jitter: not kept
KEPT = 20_000  # stalls remembered (about an hour of a badly starved loop)


@dataclass(frozen=True)
class Stall:
    """The loop woke ``lag`` seconds later than asked, at ``at`` (monotonic)."""

    at: float
    lag: float


class LagRecord:
    """Stalls as measured, oldest dropped past ``kept``; pure, for the monitor and for tests."""

    def __init__(self, kept: int = KEPT) -> None:
        self._stalls: collections.deque[Stall] = collections.deque(maxlen=kept)

    def add(self, at: float, lag: float) -> None:
        if lag >= FLOOR:
            self._stalls.append(Stall(at, lag))

    def stalled(self, since: float, until: float | None = None) -> float:
        """Seconds the loop could not run between ``since`` and ``until`` (now when None): each
        stall counted for the part of it inside the window (a stall ends when it is measured)."""
        total = 0.0
        for stall in reversed(self._stalls):
            start = stall.at - stall.lag
            if stall.at <= since:
                break
            if until is not None and start >= until:
                continue
            total += min(stall.at, until if until is not None else stall.at) - max(start, since)
        return total

    def worst(self, since: float, until: float | None = None) -> float:
        """The longest single stall that ended between ``since`` and ``until``."""
        return max((s.lag for s in self._stalls if s.at > since and (until is None or s.at <= until)), default=0.0)


class LagMonitor:
    """Measures the lag of the running event loop until stopped; one per process is enough (see
    ``process_monitor``)."""

    def __init__(self, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self.record = LagRecord()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop lag monitor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            asked = self.clock()
            await asyncio.sleep(self.interval)
            woke = self.clock()
            self.record.add(woke, woke - asked - self.interval)

    def stalled(self, since: float, until: float | None = None) -> float:
        return self.record.stalled(since, until)

    def worst(self, since: float, until: float | None = None) -> float:
        return self.record.worst(since, until)


_MONITORS: dict[asyncio.AbstractEventLoop, LagMonitor] = {}


def process_monitor() -> LagMonitor:
    """The lag monitor of the running event loop, started on first use: every part of a lab that
    shares the loop (control plane, fleet, judge, reconciler) reads the same one."""
    loop = asyncio.get_running_loop()
    for stale in [other for other in _MONITORS if other.is_closed()]:
        del _MONITORS[stale]
    monitor = _MONITORS.get(loop)
    if monitor is None:
        monitor = _MONITORS[loop] = LagMonitor()
    monitor.start()
    return monitor
