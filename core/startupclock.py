"""How long to wait for a program the lab started to begin listening — not a wall-clock constant.

A proxy's start-up is work (Squid loads its ~150-certificate bundle and initialises its certificate
database, mitmdump imports half of PyPI); on a machine shared with other jobs that work takes
longer in wall time, never more CPU. So the wait has two limits: a program still *working* (its
process tree's CPU time grows) is given its time, up to a ceiling (``CEILING_FACTOR`` times the
limit, at least ``CEILING_FLOOR``); a program that sits idle past the limit (plus whatever the
lab's own event loop stalled meanwhile, ``core/looplag``) has failed. What does not count: what
happened before the program ran (a container's first start on the ``vfs`` storage driver copies
its whole image — measured apart, never budgeted here).

Linux only (``/proc``), like the lab; without ``/proc`` (or with no process to watch: a proxy the
lab did not start) the limit is wall time plus the lab's stall.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CEILING_FACTOR = 10  # a start-up that is still working is given up to ten times its limit,
CEILING_FLOOR = 300.0  # and at least five minutes
IDLE_SECONDS = 5.0  # past the limit, this long without CPU progress is a failed start
# How often the CPU is read (a scan of /proc) at most: progress is judged in seconds, and a waiter
# asks every few tens of milliseconds (the lab's 16 mitmdump starts read /proc ~600 times otherwise).
SAMPLE_SECONDS = 1.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds: user + system, its own and its reaped children's) of one process,
    None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[1]), sum(int(value) for value in fields[11:15]) / _TICKS
    except (IndexError, ValueError):
        return None


def tree_cpu_seconds(root: int) -> float | None:
    """CPU seconds used so far by ``root`` and every live descendant (a proxy's workers, a
    container's processes below its init), None if ``root`` is gone or ``/proc`` is not there."""
    stats: dict[int, tuple[int, float]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            stats[int(name)] = stat
    if root not in stats:
        return None
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        total += stats[pid][1]
        pending += children.get(pid, [])
    return total


@dataclass
class StartupClock:
    """One start-up's wait. ``pid`` gives the program's process (None: not known, or none of the
    lab's); ``stalled(since)`` the seconds the lab's own loop could not run since ``since``."""

    limit: float
    pid: Callable[[], int | None]
    stalled: Callable[[float], float] = lambda since: 0.0
    clock: Callable[[], float] = time.monotonic
    cpu: Callable[[int], float | None] = tree_cpu_seconds
    started: float = field(init=False)
    _used: float | None = field(init=False, default=None)
    _progress_at: float = field(init=False)
    _sampled_at: float | None = field(init=False, default=None)
    _sampled: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.started = self._progress_at = self.clock()

    @property
    def ceiling(self) -> float:
        """Seconds (besides the lab's stall) after which even a working start-up has failed."""
        return max(self.limit * CEILING_FACTOR, CEILING_FLOOR)

    def expired(self) -> bool:
        """Whether to give up now (call it between looks)."""
        now = self.clock()
        if self._sampled_at is None or now - self._sampled_at >= SAMPLE_SECONDS:
            pid = self.pid()
            self._sampled, self._sampled_at = self.cpu(pid) if pid is not None else None, now
        used = self._sampled
        if used is not None and (self._used is None or used > self._used):
            self._used, self._progress_at = used, now
        waited = now - self.started - self.stalled(self.started)
        if waited <= self.limit:
            return False
        if waited > self.ceiling or used is None:
            return True
        return now - self._progress_at > IDLE_SECONDS

    def why(self) -> str:
        """What the wait saw, for the error: how long, and whether the program was working."""
        waited = self.clock() - self.started
        if self._used is None:
            return f"waited {waited:.0f} s"
        if waited - self.stalled(self.started) > self.ceiling:
            return f"waited {waited:.0f} s, its ceiling, while it used {self._used:.1f} s of CPU"
        return (f"waited {waited:.0f} s; it used {self._used:.1f} s of CPU and none in the last "
                f"{self.clock() - self._progress_at:.0f} s")
