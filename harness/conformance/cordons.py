"""When each Node was cordoned and uncordoned, from a watch on the Nodes (a thread: the
``kubernetes`` client blocks). Times are when the event arrived, so an uncordon is never seen
earlier than it happened: a node judged "uncordoned while down" really was."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)


def internal_ip(node: dict[str, Any]) -> str | None:
    """A Node's InternalIP (for a Windows instance, the address it is reached at over SSH)."""
    addresses = (node.get("status") or {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None)


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
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cordon-timeline", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _record(self, node: dict[str, Any]) -> None:
        address = internal_ip(node)
        if address is None:
            return
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        with self._lock:
            if self._state.get(address) != cordoned:
                self._state[address] = cordoned
                self.changes.append(CordonChange(dt.datetime.now(dt.UTC), address, cordoned))

    def _run(self) -> None:
        core = client.CoreV1Api(self.api)
        resource_version = ""
        while not self._stop.is_set():
            self._watch = watch.Watch()  # type: ignore[no-untyped-call]
            try:
                if not resource_version:
                    listed = core.list_node()
                    for item in listed.items:
                        self._record(self.api.sanitize_for_serialization(item))  # type: ignore[no-untyped-call]
                    resource_version = str(listed.metadata.resource_version or "")  # type: ignore[union-attr]
                events = self._watch.stream(  # type: ignore[no-untyped-call]
                    core.list_node, resource_version=resource_version, timeout_seconds=5, _request_timeout=10)
                for event in events:
                    obj = event["object"]
                    data = self.api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
                    resource_version = data["metadata"].get("resourceVersion", resource_version)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._record(data)
                    if self._stop.is_set():
                        break
            except ApiException as exc:
                if exc.status == 410:
                    resource_version = ""  # too old: list again
                elif not self._stop.is_set():
                    log.warning("the Node watch failed: %s", exc.reason)
                    self._stop.wait(0.5)
            except Exception as exc:  # the watch must outlive transient connection errors
                if not self._stop.is_set():
                    log.warning("the Node watch failed: %s", exc)
                    self._stop.wait(0.5)

    def history(self, node: str) -> list[CordonChange]:
        with self._lock:
            return [c for c in self.changes if c.node == node]

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
