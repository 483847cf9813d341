"""When each Node was cordoned and uncordoned, from the shared Node informer
(``proxyfleet.core.informer``). Times are when a change reached the event loop, so an uncordon is
never seen earlier than it happened: a node judged "uncordoned while down" really was."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from proxyfleet.core.informer import SYNCED, Informer, internal_ip

__all__ = ["CordonChange", "CordonTimeline", "internal_ip"]


@dataclass(frozen=True)
class CordonChange:
    time: dt.datetime
    node: str  # the node's InternalIP (its SSH address)
    cordoned: bool


@dataclass
class CordonTimeline:
    api: client.ApiClient
    changes: list[CordonChange] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._state: dict[str, bool] = {}
        self._informer: Informer | None = None

    def start(self) -> None:
        """Start following the Nodes (on the running event loop)."""
        self._informer = Informer(self.api, client.CoreV1Api(self.api).list_node, name="cordon timeline",
                                  handler=self._changed)
        self._informer.start()

    def stop(self) -> None:
        if self._informer is not None:
            self._informer.stop()

    def _changed(self, event: str, obj: dict[str, Any]) -> None:
        if event == SYNCED:
            for item in obj["items"]:
                self._record(item)
        elif event in ("ADDED", "MODIFIED"):
            self._record(obj)

    def _record(self, node: dict[str, Any]) -> None:
        address = internal_ip(node)
        if address is None:
            return
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        if self._state.get(address) != cordoned:
            self._state[address] = cordoned
            self.changes.append(CordonChange(dt.datetime.now(dt.UTC), address, cordoned))

    def history(self, node: str) -> list[CordonChange]:
        return [c for c in self.changes if c.node == node]

    def intervals(self, node: str, since: dt.datetime, until: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
        """The spans within [since, until] in which ``node`` was cordoned (in the order the watch
        delivered the changes: every node's edges are delayed alike, so overlaps between nodes
        are as they happened)."""
        spans: list[tuple[dt.datetime, dt.datetime]] = []
        start: dt.datetime | None = None
        for change in self.history(node):
            if change.time <= since:
                start = since if change.cordoned else None
            elif change.time > until:
                break
            elif change.cordoned and start is None:
                start = change.time
            elif not change.cordoned and start is not None:
                spans.append((start, change.time))
                start = None
        if start is not None:
            spans.append((start, until))
        return spans

    def cordoned_through(self, node: str, down_at: dt.datetime, up_at: dt.datetime) -> tuple[bool, str]:
        """Whether ``node`` was seen cordoned before it came back at ``up_at`` and not uncordoned
        before then; with a description of what was seen."""
        history = self.history(node)
        before_up = [c for c in history if c.time <= up_at]
        state_at_up = before_up[-1].cordoned if before_up else False
        cordons = [c for c in before_up if c.cordoned]
        uncordon_while_down = [c for c in history if not c.cordoned and down_at < c.time < up_at]
        if not cordons:
            return False, "never cordoned before it came back"
        if uncordon_while_down:
            early = (up_at - uncordon_while_down[0].time).total_seconds()
            return False, f"uncordoned {early:.2f}s before it came back up"
        if not state_at_up:
            return False, "schedulable while it was down"
        return True, "cordoned while down"
