"""The shape every watch-driven in-process controller shares: watches on the store wake one
level-triggered pass; a burst of events means one pass, never one per event.

A pass looks at everything it keeps, so its cost grows with the lab while the events that wake it
grow too: at 1,000 nodes the workload controllers' passes (~2,000 pods each, woken by every pod
status a kubelet posts) took 17-23 % of a lab process's CPU (py-spy). A controller may pace itself
(``pacing``): after a pass it waits that many times the pass's own CPU time before the next, so it
never takes more than ``1 / (1 + pacing)`` of the CPU whatever the lab's size, and a small lab,
whose passes cost little, still answers within ``debounce``. The wait is at most ``MAX_PAUSE``: a
rare heavy pass (the one that creates a 1,000-node lab's 2,000 pods takes ~0.7 s) must not hold
the next one back for many seconds. Passes stay level-triggered: a later pass sees every change the
wait gathered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from proxyfleet.core.cancelling import stop_task
from proxyfleet.simulators.controlplane.resources import ResourceType
from proxyfleet.simulators.controlplane.store import Store, Watcher

log = logging.getLogger(__name__)
MAX_PAUSE = 0.5  # seconds: the longest a paced controller waits before its next pass


class WatchingController:
    """Subclasses name what they watch (``watches``), may filter events (``wants``) and do one
    whole pass in ``reconcile_pass``; a pass that raises is logged, never stops the control plane."""

    name = "controller"
    watches: tuple[ResourceType, ...] = ()
    debounce = 0.0  # wait this long after a wake-up so related writes land in one pass
    pacing = 0.0  # and at least this many times the last pass's CPU time (passes that do not await)
    clock: Callable[[], float] = staticmethod(time.thread_time)  # the pass's CPU: the loop's thread

    def __init__(self, store: Store) -> None:
        self.store = store
        self.last_pass_cost = 0.0  # seconds of CPU the last pass took
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watchers: list[Watcher] = []
        self._relays: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for resource_type in self.watches:
            watcher = self.store.watch(resource_type, None, self.store.resource_version, lambda o: True)
            self._watchers.append(watcher)
            self._relays.append(loop.create_task(self._relay(watcher),
                                                 name=f"{self.name} watch {resource_type.plural}"))
        self._task = loop.create_task(self._run(), name=self.name)
        self._wake.set()

    async def stop(self) -> None:
        """Stop watching and reconciling (as scaling the controller to zero would); ``start`` resumes."""
        for watcher in self._watchers:
            self.store.stop_watch(watcher)
        for relay in self._relays:
            relay.cancel()
        self._watchers, self._relays = [], []
        task, self._task = self._task, None
        await stop_task(task)

    def wants(self, event: dict[str, Any]) -> bool:
        """Whether a watch event may change what a pass would do (default: every event)."""
        return True

    async def reconcile_pass(self) -> None:
        raise NotImplementedError

    async def _relay(self, watcher: Watcher) -> None:
        while (event := await watcher.queue.get()) is not None:
            if self.wants(event):
                self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if pause := pause_before_pass(self.debounce, self.pacing, self.last_pass_cost):
                await asyncio.sleep(pause)
            self._wake.clear()
            started = self.clock()
            try:
                await self.reconcile_pass()
            except Exception:  # a bug here must not stop the control plane
                log.exception("%s failed", self.name)
            self.last_pass_cost = self.clock() - started


def pause_before_pass(debounce: float, pacing: float, last_pass_cost: float) -> float:
    """How long a woken controller waits before its pass: ``debounce`` for a burst of related
    writes to land in one pass, longer when its last pass was expensive (``pacing`` times its cost,
    at most ``MAX_PAUSE``)."""
    return max(debounce, min(MAX_PAUSE, pacing * last_pass_cost))
