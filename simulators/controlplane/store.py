"""Objects, resource versions and watches: the storage half of the API server.

Plain dicts in, plain dicts out (always copies). Every write takes the next global
resourceVersion and is appended to a bounded history that watches replay from; a watch asking
for a version older than the history gets ``410 Gone``. An update that changes nothing is not a
write (same resourceVersion, no event), as in kube-apiserver.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.simulators.controlplane.errors import already_exists, bad_request, conflict, gone, not_found
from proxyfleet.simulators.controlplane.jsoncopy import copy_json
from proxyfleet.simulators.controlplane.resources import RESOURCE_TYPES, ResourceType
from proxyfleet.simulators.controlplane.selectors import field_value

Predicate = Callable[[dict[str, Any]], bool]
DEFAULT_HISTORY = 10_000  # events kept for watch resumption (kube keeps far fewer)
MAX_WATCH_BACKLOG = 100_000
DELETION_FIELDS = ("deletionTimestamp", "deletionGracePeriodSeconds")  # set by a graceful DELETE only


def now_rfc3339(clock: Callable[[], dt.datetime] | None = None) -> str:
    moment = clock() if clock else dt.datetime.now(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class StoredEvent:
    resource_version: int
    kind: str  # ADDED, MODIFIED, DELETED
    key: tuple[str, str]
    namespace: str
    old: dict[str, Any] | None
    new: dict[str, Any]


@dataclass(eq=False)
class Watcher:
    key: tuple[str, str]
    namespace: str | None
    predicate: Predicate
    queue: asyncio.Queue[dict[str, Any] | None] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def offer(self, event: StoredEvent) -> None:
        """Translate a stored event into what this watcher sees, with selector transitions."""
        if self.closed or event.key != self.key:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        was = event.old is not None and self.predicate(event.old)
        now = event.kind != "DELETED" and self.predicate(event.new)
        if event.kind == "DELETED":
            kind = "DELETED" if self.predicate(event.new) else None
        elif was and now:
            kind = "MODIFIED"
        elif now:
            kind = "ADDED"
        elif was:
            kind = "DELETED"
        else:
            kind = None
        if kind is None:
            return
        if self.queue.qsize() > MAX_WATCH_BACKLOG:
            self.close()
            return
        self.queue.put_nowait({"type": kind, "object": event.new})

    async def next(self, within: float) -> dict[str, Any] | None:
        """The next event (None once closed); ``TimeoutError`` only if none is pending after
        ``within`` seconds. A caller's own timeout around ``queue.get()`` can fire with an event
        already queued (the put and the timeout in one loop iteration, 3.12+): a bookmark sent then
        would claim a version whose event the client never got, and a watch resumed from it would
        lose that event for good. So the wait and that check live here together."""
        try:
            async with asyncio.timeout(within):  # not wait_for: on 3.11 it can eat a cancellation
                return await self.queue.get()
        except TimeoutError:
            if self.queue.empty():
                raise
            return self.queue.get_nowait()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


# The fields a list looks objects up by instead of scanning every one: kube-apiserver's watch cache
# indexes pods by the node they are bound to, so each kubelet's list of its own pods does not grow
# with the cluster (at 1,000 nodes, a thousand kubelets each scanning every pod would).
INDEXED_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {("", "pods"): ("spec.nodeName",)}

Key = tuple[str, str]  # (namespace, name)


class Store:
    def __init__(self, history: int = DEFAULT_HISTORY,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        self._counter = itertools.count(1000)
        self._rv = next(self._counter)
        self._objects: dict[tuple[str, str], dict[Key, dict[str, Any]]] = {t.key: {} for t in RESOURCE_TYPES}
        # (resource type, field) -> the field's value -> the objects that have it
        self._indexes: dict[tuple[tuple[str, str], str], dict[str, set[Key]]] = {
            (kind, path): {} for kind, paths in INDEXED_FIELDS.items() for path in paths}
        self._history: deque[StoredEvent] = deque(maxlen=history)
        self._watchers: set[Watcher] = set()
        self._clock = clock
        self.writes = 0
        # Called with every write as it is committed (in the writer's turn, before any watch sees
        # it): the lab's own records that need the commit's instant rather than a watch's receipt.
        self.observers: list[Callable[[StoredEvent], None]] = []

    # --- versions ------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    @property
    def oldest_watchable(self) -> int:
        """The lowest resourceVersion a watch may start from."""
        return self._history[0].resource_version - 1 if self._history else self._rv

    def _bump(self) -> int:
        self._rv = next(self._counter)
        return self._rv

    def _record(self, kind: str, resource_type: ResourceType, old: dict[str, Any] | None,
                new: dict[str, Any]) -> None:
        namespace = new.get("metadata", {}).get("namespace", "")
        event = StoredEvent(int(new["metadata"]["resourceVersion"]), kind, resource_type.key,
                            namespace, old, new)
        self._history.append(event)
        self.writes += 1
        for observer in self.observers:
            observer(event)
        for watcher in list(self._watchers):
            watcher.offer(event)
            if watcher.closed:
                self._watchers.discard(watcher)

    # --- reads -----------------------------------------------------------------------------

    def _bucket(self, resource_type: ResourceType) -> dict[tuple[str, str], dict[str, Any]]:
        return self._objects[resource_type.key]

    def peek(self, resource_type: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """The stored object itself (no copy) for in-process controllers that only read."""
        return self._bucket(resource_type).get((namespace, name))

    def scan(self, resource_type: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        """The stored objects themselves (no copies), for in-process controllers that only read."""
        return [obj for (ns, _), obj in self._bucket(resource_type).items() if namespace is None or ns == namespace]

    def get(self, resource_type: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        return copy_json(self.stored(resource_type, namespace, name))

    def stored(self, resource_type: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """The stored object itself (no copy; NotFound if there is none), for a reader that only
        reads it before its next await — the API server encoding a response."""
        stored = self._bucket(resource_type).get((namespace, name))
        if stored is None:
            raise not_found(resource_type.plural, name, resource_type.group)
        return stored

    def select(self, resource_type: ResourceType, namespace: str | None,
               predicate: Predicate | None = None, fields: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The objects of ``resource_type`` (in ``namespace``, or all) that ``predicate`` takes,
        ordered by namespace and name: the stored objects themselves (no copies), for a reader that
        only reads them before its next await. ``fields``: values ``predicate`` requires of fields
        (a field selector's equalities), which an indexed field narrows to before the predicate."""
        bucket = self._bucket(resource_type)
        keys: set[Key] | None = None
        for path, value in (fields or {}).items():
            index = self._indexes.get((resource_type.key, path))
            if index is not None:
                found = index.get(value, set())
                keys = found if keys is None else keys & found
        chosen = bucket.items() if keys is None else ((key, bucket[key]) for key in keys)
        items = [obj for (ns, _), obj in sorted(chosen) if namespace is None or ns == namespace]
        if predicate is not None:
            items = [obj for obj in items if predicate(obj)]
        return items

    def list(self, resource_type: ResourceType, namespace: str | None,
             predicate: Predicate | None = None, fields: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Copies of what ``select`` returns."""
        return copy_json(self.select(resource_type, namespace, predicate, fields))

    # --- writes ------------------------------------------------------------------------------

    def _put(self, resource_type: ResourceType, key: Key, old: dict[str, Any] | None,
             new: dict[str, Any] | None) -> None:
        """Store ``new`` at ``key`` (None: remove), keeping the type's indexes in step."""
        bucket = self._bucket(resource_type)
        for path in INDEXED_FIELDS.get(resource_type.key, ()):
            index = self._indexes[(resource_type.key, path)]
            before, after = (None if o is None else field_value(o, path) for o in (old, new))
            if before == after:
                continue
            if before is not None:
                index[before].discard(key)
                if not index[before]:
                    del index[before]
            if after is not None:
                index.setdefault(after, set()).add(key)
        if new is None:
            del bucket[key]
        else:
            bucket[key] = new

    def create(self, resource_type: ResourceType, obj: dict[str, Any], *,
               dry_run: bool = False) -> dict[str, Any]:
        obj = copy_json(obj)
        metadata = obj.setdefault("metadata", {})
        namespace = metadata.get("namespace", "") if resource_type.namespaced else ""
        name = metadata["name"]
        bucket = self._bucket(resource_type)
        if (namespace, name) in bucket:
            raise already_exists(resource_type.plural, name, resource_type.group)
        obj["apiVersion"], obj["kind"] = resource_type.api_version, resource_type.kind
        metadata.pop("resourceVersion", None)
        metadata.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(self._clock))
        if "spec" in obj:
            metadata["generation"] = 1
        if dry_run:
            metadata["resourceVersion"] = self.resource_version
            return obj
        metadata["resourceVersion"] = str(self._bump())
        self._put(resource_type, (namespace, name), None, obj)
        self._record("ADDED", resource_type, None, obj)
        return copy_json(obj)

    def update(self, resource_type: ResourceType, namespace: str, name: str,
               obj: dict[str, Any], *, subresource: str | None = None,
               dry_run: bool = False) -> dict[str, Any]:
        bucket = self._bucket(resource_type)
        existing = bucket.get((namespace, name))
        if existing is None:
            raise not_found(resource_type.plural, name, resource_type.group)
        metadata = obj.get("metadata") or {}
        if metadata.get("name") not in (None, name):
            raise bad_request(f"the name of the object ({metadata.get('name')}) does not match the "
                              f"name on the URL ({name})")
        given_rv = metadata.get("resourceVersion")
        if given_rv and str(given_rv) != existing["metadata"]["resourceVersion"]:
            raise conflict(resource_type.plural, name, resource_type.group)
        if subresource == "status":
            updated = copy_json(existing)
            if "status" in obj:
                updated["status"] = copy_json(obj["status"])
            else:
                updated.pop("status", None)
        else:
            updated = copy_json(obj)
            updated["apiVersion"], updated["kind"] = resource_type.api_version, resource_type.kind
            keep = {k: existing["metadata"][k] for k in ("uid", "creationTimestamp", "generation",
                                                         "namespace", "name", *DELETION_FIELDS)
                    if k in existing["metadata"]}
            updated["metadata"] = {**copy_json(metadata), **keep}
            for key in DELETION_FIELDS:  # set only by a DELETE, never by an update (as the apiserver resets them)
                if key not in existing["metadata"]:
                    updated["metadata"].pop(key, None)
            if resource_type.status_subresource:
                if "status" in existing:
                    updated["status"] = copy_json(existing["status"])
                else:
                    updated.pop("status", None)
            if "spec" in updated and updated.get("spec") != existing.get("spec"):
                updated["metadata"]["generation"] = existing["metadata"].get("generation", 0) + 1
            elif "spec" in updated and "generation" not in updated["metadata"]:
                updated["metadata"]["generation"] = 1
        updated["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        if _same(updated, existing) or dry_run:
            return copy_json(updated if dry_run else existing)
        updated["metadata"]["resourceVersion"] = str(self._bump())
        self._put(resource_type, (namespace, name), existing, updated)
        self._record("MODIFIED", resource_type, existing, updated)
        return copy_json(updated)

    def mark_deleting(self, resource_type: ResourceType, namespace: str, name: str,
                      metadata: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """A graceful DELETE accepted: the object stays, with ``deletionTimestamp`` and
        ``deletionGracePeriodSeconds`` from ``metadata`` (MODIFIED to watchers)."""
        bucket = self._bucket(resource_type)
        existing = bucket.get((namespace, name))
        if existing is None:
            raise not_found(resource_type.plural, name, resource_type.group)
        updated = copy_json(existing)
        for key in DELETION_FIELDS:
            updated["metadata"][key] = metadata[key]
        if dry_run:
            return updated
        updated["metadata"]["resourceVersion"] = str(self._bump())
        self._put(resource_type, (namespace, name), existing, updated)
        self._record("MODIFIED", resource_type, existing, updated)
        return copy_json(updated)

    def delete(self, resource_type: ResourceType, namespace: str, name: str, *,
               dry_run: bool = False) -> dict[str, Any]:
        bucket = self._bucket(resource_type)
        existing = bucket.get((namespace, name))
        if existing is None:
            raise not_found(resource_type.plural, name, resource_type.group)
        if dry_run:
            return copy_json(existing)
        if resource_type.plural == "namespaces" and resource_type.group == "":
            for other in RESOURCE_TYPES:
                if other.namespaced:
                    for (ns, other_name) in list(self._bucket(other)):
                        if ns == name:
                            self.delete(other, ns, other_name)
        self._put(resource_type, (namespace, name), existing, None)
        deleted = copy_json(existing)
        deleted["metadata"]["resourceVersion"] = str(self._bump())
        self._record("DELETED", resource_type, existing, deleted)
        return deleted

    # --- watches --------------------------------------------------------------------------------

    def watch(self, resource_type: ResourceType, namespace: str | None, since: str | None,
              predicate: Predicate) -> Watcher:
        """Start a watch; ``since`` None/""/"0" means "current state first, then changes"."""
        watcher = Watcher(resource_type.key, namespace, predicate)
        if since in (None, "", "0"):
            for obj in self.list(resource_type, namespace, predicate):
                watcher.queue.put_nowait({"type": "ADDED", "object": obj})
        else:
            try:
                start = int(since)
            except ValueError:
                raise bad_request(f'invalid resource version "{since}"') from None
            if start < self.oldest_watchable:
                raise gone(f"too old resource version: {start} ({self.oldest_watchable})")
            for event in self._history:
                if event.resource_version > start:
                    watcher.offer(event)
        self._watchers.add(watcher)
        return watcher

    def stop_watch(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)
        watcher.close()

    def compact(self) -> None:
        """Forget the history (as etcd compaction does): older watches now get 410."""
        self._history.clear()
        self._bump()


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two objects are the same JSON. Unequal in Python is different JSON (no NaN is ever
    stored: ``decoding``); equal in Python may still differ as JSON (1, 1.0 and true are equal)."""
    return a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
