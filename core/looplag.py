"""How late an event loop has been: the lab's own measure of its starvation (DESIGN.md §10).

Every process of the lab runs one ``LagMonitor`` on its event loop: a task that asks to wake every
``interval`` seconds and records how much later than asked it woke. Whatever else that loop serves
— simulated kubelets renewing their leases, the lifecycle controller watching them, the judge's
deadlines, the reference reconciler — was held up at least that long, because nothing runs on a
loop between two of its turns. A busy machine (another CI job, a CPU burner beside the run) shows
up here as lag, and the lab counts it against its own timings instead of against a reconciler.

``stalled(since, until)`` is how long the loop could not run between two moments (the sum of the
lag it measured then), ``worst(since)`` the longest single stall. Times are ``time.monotonic()``
(one clock for every process of the machine, so stalls compare across processes).

A process the lab cannot ask over a socket (``proxyfleet reconcile`` as an external reconciler)
appends its stalls to the file named by ``PROXYFLEET_LAG_FILE`` (``LagLog``), which the lab reads.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from proxyfleet.core.cancelling import stop_task

INTERVAL = 0.05  # seconds between wake-ups asked for
FLOOR = 0.01  # lag below this is the loop's ordinary jitter: not kept
KEPT = 20_000  # stalls remembered (about an hour of a badly starved loop)
LAG_FILE_ENV = "PROXYFLEET_LAG_FILE"  # set by the lab for a reconciler process it starts


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


class LagLog:
    """Stalls as JSON lines (``{"at": …, "lag": …}``) in a file another process reads: how a process
    the lab cannot ask reports its lag. Opened append-only, private to this user; a line is written
    whole, so a reader sees complete lines (and skips a torn last one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def write(self, stall: Stall) -> None:
        os.write(self._fd, (json.dumps({"at": round(stall.at, 4), "lag": round(stall.lag, 4)}) + "\n").encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @staticmethod
    def read(path: Path) -> LagRecord | None:
        """The stalls a process logged (None: it logged nothing, not even that it measures)."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        record = LagRecord()
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                record.add(float(entry["at"]), float(entry["lag"]))
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line, or another writer's
        return record


class LagMonitor:
    """Measures the lag of the running event loop until stopped; one per process is enough (see
    ``process_monitor``). With a ``log``, every stall kept is also written there."""

    def __init__(self, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic,
                 log: LagLog | None = None) -> None:
        self.interval = interval
        self.clock = clock
        self.record = LagRecord()
        self.log = log
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop lag monitor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await stop_task(task)

    async def _run(self) -> None:
        while True:
            asked = self.clock()
            await asyncio.sleep(self.interval)
            woke = self.clock()
            lag = woke - asked - self.interval
            self.record.add(woke, lag)
            if self.log is not None and lag >= FLOOR:
                self.log.write(Stall(woke, lag))

    def stalled(self, since: float, until: float | None = None) -> float:
        return self.record.stalled(since, until)

    def worst(self, since: float, until: float | None = None) -> float:
        return self.record.worst(since, until)


_MONITORS: dict[asyncio.AbstractEventLoop, LagMonitor] = {}


def process_monitor() -> LagMonitor:
    """The lag monitor of the running event loop, started on first use: every part of a lab that
    shares the loop (control plane, fleet, judge, reconciler) reads the same one. Where the lab
    named a lag file (``PROXYFLEET_LAG_FILE``), the stalls are written there too."""
    loop = asyncio.get_running_loop()
    for stale in [other for other in _MONITORS if other.is_closed()]:
        del _MONITORS[stale]
    monitor = _MONITORS.get(loop)
    if monitor is None:
        named = os.environ.get(LAG_FILE_ENV)
        monitor = _MONITORS[loop] = LagMonitor(log=LagLog(Path(named)) if named else None)
    monitor.start()
    return monitor


async def sleep_running(seconds: float, since: float | None = None) -> None:
    """Sleep until ``seconds`` of time this process's loop could run have passed since ``since``
    (monotonic; None: now) — its stalls (``process_monitor``) given back, as a simulated host's
    clock stands still while the lab that runs it cannot run. A wake-up that is itself late counts
    as a stall even before the monitor has measured it (both may be due at the same turn)."""
    began = time.monotonic() if since is None else since
    monitor = process_monitor()
    due = began + seconds
    while True:
        due = max(due, began + seconds + monitor.stalled(began))
        now = time.monotonic()
        if now >= due:
            return
        await asyncio.sleep(due - now)  # a simulated duration, not synchronisation
        late = time.monotonic() - due
        if late >= FLOOR:
            due += late


async def poll_until(done: Callable[[], Awaitable[bool]], within: float, every: float,
                     excused: Callable[[], float] = lambda: 0.0) -> bool:
    """Ask ``done`` every ``every`` seconds until it says yes, for at most ``within`` seconds moved
    by the time this process's loop could not run meanwhile (``process_monitor``: a starved lab is
    given back the time it lost) and by ``excused()``, the seconds since the poll began that the
    caller knows were not the awaited party's (e.g. its asks queued behind the lab's other work);
    whether it did. ``done`` is asked at least once, and once more when the time is up."""
    began, lag = time.monotonic(), process_monitor()
    while not await done():
        await asyncio.sleep(every)  # polling a condition, bounded above; the monitor measures meanwhile
        if time.monotonic() - began > within + lag.stalled(began) + excused():
            return await done()
    return True
