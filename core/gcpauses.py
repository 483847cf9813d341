"""How long the garbage collector stopped this process: a part of its event loop's lag
(``core.looplag``) the lab can name. A collection runs in whichever task allocated last, with the
loop and every thread held (the GIL), so a full collection of a large lab's heap is a stall of
its own: timed here, a step's lag says how much of it was the collector's and how much the
machine's (another process, the CPU's other users) or the lab's own work.

One ``gc.callbacks`` hook per process (``process_gc_pauses``), two clock reads per collection;
pauses under ``looplag.FLOOR`` are not kept, as the loop's ordinary jitter is not.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable
from typing import Any

from proxyfleet.core.looplag import LagRecord


class GCPauses:
    """Each garbage collection's pause, kept as the ``LagRecord`` of stalls it is (ended at,
    lasted). ``hook`` is what ``gc.callbacks`` calls."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.record = LagRecord()
        self.collections = 0
        self._began: float | None = None

    def hook(self, phase: str, info: dict[str, Any]) -> None:
        """``gc.callbacks``' signature: a collection starts or stops."""
        if phase == "start":
            self._began = self.clock()
        elif phase == "stop" and self._began is not None:
            ended = self.clock()
            self.collections += 1
            self.record.add(ended, ended - self._began)
            self._began = None

    def paused(self, since: float, until: float | None = None) -> float:
        """Seconds the collector held the process between ``since`` and ``until`` (now: None)."""
        return self.record.stalled(since, until)

    def worst(self, since: float, until: float | None = None) -> float:
        """The longest single collection that ended in the window."""
        return self.record.worst(since, until)


@functools.cache
def process_gc_pauses() -> GCPauses:
    """This process's collections, timed from the first call on."""
    pauses = GCPauses()
    gc.callbacks.append(pauses.hook)
    return pauses
