"""How many instances may be unavailable at once (maxUnavailable). An instance counts while the
reconciler reboots it, while the cluster records a reboot owed to it (asked for by this reconciler
before a restart), and after it failed to come back from its reboot, until it answers again: a
node that never came back keeps using budget, so the rollout continues more slowly instead of
taking more nodes down. A node only unreachable over SSH (not taken down by the reconciler) does
not count: the others proceed, and it is retried."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

# How often a waiting reboot looks again at reboots recorded in the cluster (they change on the
# cluster's schedule, not on one of this budget's own notifications).
RECHECK = 0.5


class DisruptionBudget:
    """Reboot slots shared by every worker of one reconciler."""

    def __init__(self, limit: int, recorded: Callable[[], set[str]] = set) -> None:
        """``recorded``: instances the cluster says are mid-reboot (a reboot asked for and not yet
        verified, say by this reconciler before it was restarted): they count too."""
        self.limit = limit
        self.recorded = recorded
        self.rebooting: set[str] = set()
        self.unreachable: set[str] = set()
        self._changed = asyncio.Condition()

    def unavailable(self, besides: str = "") -> int:
        """Instances unavailable now, not counting ``besides``."""
        return len((self.rebooting | self.unreachable | self.recorded()) - {besides})

    @asynccontextmanager
    async def reboot(self, address: str) -> AsyncIterator[None]:
        """Hold one slot while ``address`` is cordoned, restarted and verified."""
        async with self._changed:
            while self.unavailable(besides=address) >= self.limit:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(RECHECK):
                        await self._changed.wait()
            self.rebooting.add(address)
            self.unreachable.discard(address)
        try:
            yield
        finally:
            async with self._changed:
                self.rebooting.discard(address)
                # As many waiters as there are free slots, not all of them: at 1,000 nodes hundreds
                # wait, and each woken one counts the fleet's unavailable nodes again.
                self._changed.notify(max(1, self.limit - self.unavailable()))

    async def reachable(self, address: str, reachable: bool) -> None:
        """Record whether the last attempt to reach ``address`` succeeded."""
        if reachable == (address not in self.unreachable):
            return
        async with self._changed:
            if reachable:
                self.unreachable.discard(address)
            else:
                self.unreachable.add(address)
            self._changed.notify_all()
