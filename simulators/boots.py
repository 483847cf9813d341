"""A node's boots, whatever its kind: each power-on a record with a fresh boot id (what
``/proc/sys/kernel/random/boot_id`` shows on Linux, a new id per boot on Windows too), its number
and when it came up and went down — the lab's evidence of which reboots happened — and whether a
reboot's sessions lost their exit status."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from dataclasses import dataclass


def utc_now() -> dt.datetime:
    """The lab's wall clock, as boot records keep it."""
    return dt.datetime.now(dt.UTC)


@dataclass
class BootRecord:
    """One boot of one node."""

    boot_id: str
    number: int
    booted_at: dt.datetime
    shutdown_at: dt.datetime | None = None

    @classmethod
    def after(cls, boots: list[BootRecord], now: dt.datetime) -> BootRecord:
        """The boot that follows ``boots`` at ``now``: numbered next, a fresh id, and later than
        the last one's start even where the clock did not move (two boots are never one instant)."""
        if boots and now <= boots[-1].booted_at:
            now = boots[-1].booted_at + dt.timedelta(microseconds=1)
        return cls(uuid.uuid4().hex, len(boots) + 1, now)


class ExitStatusLoss:
    """Whether the sessions that end while a node reboots lose their exit status (Windows'
    Restart-Computer over SSH, OCPBUGS-90077; sshd killed first on Linux): decided once per
    reboot by a generator seeded from the lab's seed and the node's name, so a run repeats, and
    counted as it happens (lab evidence)."""

    def __init__(self, seed: int, name: str) -> None:
        self._dice = random.Random(f"{seed}:{name}")
        self.lost = False  # this reboot's decision
        self.count = 0  # sessions that ended without one

    def decide(self, rate: float) -> None:
        """A reboot was asked for: whether its sessions lose theirs, at ``rate``."""
        self.lost = self._dice.random() < rate

    def keeps(self, rebooting: bool) -> bool:
        """Whether a session ending now sends its exit status (counted when it does not)."""
        if rebooting and self.lost:
            self.count += 1
            return False
        return True
