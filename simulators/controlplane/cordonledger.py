"""When each Node was cordoned and uncordoned, at the instant the store committed the change.

The lab's outage edges are exact (the node's own sshd going down and up); the judge's watch of
the Nodes sees a cordon only when the event reaches its loop, late by whatever the machine's load
made it. Mixing the two clocks counts a node uncordoned before the next one went down as both
unavailable at once, so the lab keeps cordons on the outages' clock: the store's commit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from proxyfleet.simulators.controlplane.resources import NODES
from proxyfleet.simulators.controlplane.store import StoredEvent

__all__ = ["CordonLedger"]


def _unschedulable(node: dict[str, Any] | None) -> bool:
    return bool(((node or {}).get("spec") or {}).get("unschedulable"))


class CordonLedger:
    """Each Node's cordon changes by name: (when committed, cordoned afterwards), oldest first.
    A Node created cordoned starts with a change; one deleted while cordoned ends with one."""

    def __init__(self, clock: Callable[[], dt.datetime] | None = None) -> None:
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._changes: dict[str, list[tuple[dt.datetime, bool]]] = {}

    def observe(self, event: StoredEvent) -> None:
        """A store observer (``Store.observers``): records the writes that change a Node's cordon."""
        if event.key != NODES.key:
            return
        before = _unschedulable(event.old)
        after = False if event.kind == "DELETED" else _unschedulable(event.new)
        if before != after:
            name = str(event.new["metadata"]["name"])
            self._changes.setdefault(name, []).append((self._clock(), after))

    def changes(self, name: str) -> tuple[tuple[dt.datetime, bool], ...]:
        """Node ``name``'s cordon changes so far, oldest first."""
        return tuple(self._changes.get(name, ()))
