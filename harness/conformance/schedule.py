"""When the judge looks at a node again while waiting for a step to converge.

A node off its target on its own machine state (variables, certificates, services) is looked at
again only when something happened on it since the last look (a command ran, it booted, a service
started: its *activity* grew) or once the look is ``stale_after`` seconds old. A node waiting for
its turn in a rollout, or for its drain, changes nothing, and probing it at every poll was most of
a 100-node run's SSH work; a change nothing announces (an out-of-band edit) is still seen within
the bound. Anything else (Node status, reachability) is looked at every time: the machine does
not announce it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MACHINE_PROBLEMS = frozenset({"registry-env", "certificates", "services-restarted"})


class LookSchedule:
    """Per node: the activity count after the last look and when it was taken."""

    def __init__(self, stale_after: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after = stale_after
        self.clock = clock
        self._last: dict[str, tuple[int, float]] = {}

    def looked(self, address: str, activity_before: int) -> None:
        """Record a look that began at ``activity_before``; the look is one command itself, so
        only what goes beyond it is someone else's doing."""
        self._last[address] = (activity_before + 1, self.clock())

    def due(self, address: str, problem: str, activity: int) -> bool:
        """Whether a node last seen with ``problem`` must be looked at again now."""
        if problem not in MACHINE_PROBLEMS or address not in self._last:
            return True
        seen, when = self._last[address]
        return activity > seen or self.clock() - when >= self.stale_after
