"""The shape every watch-driven in-process controller shares: watches on the store wake one
level-triggered pass; a burst of events means one pass, never one per event."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from proxyfleet.core.cancelling import stop_task
from proxyfleet.simulators.controlplane.resources import ResourceType
from proxyfleet.simulators.controlplane.store import Store, Watcher

log = logging.getLogger(__name__)


class WatchingController:
    """Subclasses name what they watch (``watches``), may filter events (``wants``) and do one
    whole pass in ``reconcile_pass``; a pass that raises is logged, never stops the control plane."""

    name = "controller"
    watches: tuple[ResourceType, ...] = ()
    debounce = 0.0  # wait this long after a wake-up so related writes land in one pass

    def __init__(self, store: Store) -> None:
        self.store = store
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
            if self.debounce:
                await asyncio.sleep(self.debounce)
            self._wake.clear()
            try:
                await self.reconcile_pass()
            except Exception:  # a bug here must not stop the control plane
                log.exception("%s failed", self.name)
