"""A node's boots, whatever its kind: each power-on a record with a fresh boot id (what
``/proc/sys/kernel/random/boot_id`` shows on Linux, a new id per boot on Windows too), its number
and when it came up and went down — the lab's evidence of which reboots happened."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass


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
