"""When each Node was cordoned and uncordoned, from the shared Node informer
(``proxyfleet.core.informer``). Times are when a change reached the event loop, so an uncordon is
never seen earlier than it happened: a node judged "uncordoned while down" really was.

The same watch tells the judge when a Node may have just become converged (schedulable or not,
Ready or not, its ``applied`` claim written or removed: what a reconciler changes last when it
finishes a node), so it looks again at once instead of at its next poll."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from proxyfleet.core.cancelling import wait_until
from proxyfleet.core.contract import APPLIED
from proxyfleet.core.informer import SYNCED, Informer, by_internal_ip, internal_ip

__all__ = ["CordonChange", "CordonTimeline", "completion_marks", "cordoned_spans", "internal_ip"]


@dataclass(frozen=True)
class CordonChange:
    time: dt.datetime
    node: str  # the node's InternalIP (its SSH address)
    cordoned: bool

BY_ADDRESS = "address"  # the informer's index of Nodes by InternalIP


@dataclass
class CordonTimeline:
    api: client.ApiClient
    changes: list[CordonChange] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._state: dict[str, bool] = {}
        self._informer: Informer | None = None
        self._seen: dict[str, tuple[object, ...]] = {}
        # Set when any Node's completion marks change; whoever waits on it clears it first.
        self.nodes_changed = asyncio.Event()

    def start(self) -> None:
        """Start following the Nodes (on the running event loop)."""
        self._informer = Informer(self.api, client.CoreV1Api(self.api).list_node, name="cordon timeline",
                                  indexers={BY_ADDRESS: by_internal_ip}, handler=self._changed)
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
        elif event == "DELETED" and (address := internal_ip(obj)) is not None:
            self._seen.pop(address, None)
            self.nodes_changed.set()

    def _record(self, node: dict[str, Any]) -> None:
        address = internal_ip(node)
        if address is None:
            return
        seen = completion_marks(node)
        if self._seen.get(address) != seen:
            self._seen[address] = seen
            self.nodes_changed.set()
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        if self._state.get(address) != cordoned:
            self._state[address] = cordoned
            self.changes.append(CordonChange(dt.datetime.now(dt.UTC), address, cordoned))

    def node(self, address: str) -> dict[str, Any] | None:
        """The Node at ``address`` as the watch last delivered it (None: not seen, or not
        following yet). It may lag the API server: a caller judging a node on target reads afresh."""
        if self._informer is None or not self._informer.synced.is_set():
            return None
        return self._informer.first(BY_ADDRESS, address)

    def nodes(self) -> list[dict[str, Any]]:
        """Every Node as the watch last delivered it (none while not following yet); it may lag
        the API server, as ``node`` may."""
        if self._informer is None or not self._informer.synced.is_set():
            return []
        return list(self._informer.cache.values())

    async def wait_for_node_change(self, within: float) -> bool:
        """Wait until a Node changed since ``nodes_changed`` was last cleared, at most ``within``
        seconds; whether one did."""
        return await wait_until(self.nodes_changed, within)

    def history(self, node: str) -> list[CordonChange]:
        return [c for c in self.changes if c.node == node]

    def intervals(self, node: str, since: dt.datetime, until: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
        """The spans within [since, until] in which ``node`` was cordoned (in the order the watch
        delivered the changes: every node's edges are delayed alike, so overlaps between nodes
        are as they happened — but not against edges on another clock, see ``cordoned_spans``)."""
        return cordoned_spans(((c.time, c.cordoned) for c in self.history(node)), since, until)

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


def cordoned_spans(changes: Iterable[tuple[dt.datetime, bool]], since: dt.datetime,
                   until: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    """The spans within [since, until] in which a node was cordoned, from its cordon changes
    ((when, cordoned afterwards), oldest first). Spans compared with outage edges must come from
    changes on the outages' clock (the lab's store commits), not a watch's receipt times."""
    spans: list[tuple[dt.datetime, dt.datetime]] = []
    start: dt.datetime | None = None
    for time, cordoned in changes:
        if time <= since:
            start = since if cordoned else None
        elif time > until:
            break
        elif cordoned and start is None:
            start = time
        elif not cordoned and start is not None:
            spans.append((start, time))
            start = None
    if start is not None:
        spans.append((start, until))
    return spans


def completion_marks(node: dict[str, Any]) -> tuple[object, ...]:
    """What of a Node tells that a reconciler may have finished with it: schedulable, Ready, and its
    ``applied`` claim (not the state label's steps along the way, nor the heartbeat times a
    kubelet's status post changes every few seconds)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return bool((node.get("spec") or {}).get("unschedulable")), ready, annotations.get(APPLIED)
