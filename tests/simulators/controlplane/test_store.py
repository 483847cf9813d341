"""The store as etcd plus the registry behave: resource versions, generation on spec changes,
optimistic concurrency, no-op updates, status subresource, watches with selector transitions,
resume, and 410 after compaction."""

from __future__ import annotations

from typing import Any

import pytest

from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.resources import CONFIGMAPS, NODES, PODS, resource
from proxyfleet.simulators.controlplane.selectors import field_selector, label_selector
from proxyfleet.simulators.controlplane.store import Store


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}, "data": {"k": "v"}}


def drain(watcher: Any) -> list[tuple[str, str]]:
    events = []
    while not watcher.queue.empty():
        item = watcher.queue.get_nowait()
        if item is not None:
            events.append((item["type"], item["object"]["metadata"]["name"]))
    return events


def test_writes_bump_versions_and_noop_updates_do_not() -> None:
    store = Store()
    created = store.create(CONFIGMAPS, configmap("a"))
    rv = created["metadata"]["resourceVersion"]
    assert store.update(CONFIGMAPS, "ns", "a", created)["metadata"]["resourceVersion"] == rv  # nothing changed
    changed = {**created, "data": {"k": "w"}}
    assert int(store.update(CONFIGMAPS, "ns", "a", changed)["metadata"]["resourceVersion"]) > int(rv)
    with pytest.raises(APIError) as stale:
        store.update(CONFIGMAPS, "ns", "a", {**created, "data": {"k": "x"}})  # the old resourceVersion
    assert stale.value.code == 409
    with pytest.raises(APIError) as exists:
        store.create(CONFIGMAPS, configmap("a"))
    assert exists.value.reason == "AlreadyExists"


def test_generation_counts_spec_changes_only() -> None:
    store = Store()
    node = store.create(NODES, {"metadata": {"name": "n"}, "spec": {"unschedulable": False}})
    assert node["metadata"]["generation"] == 1
    node["metadata"]["labels"] = {"x": "y"}
    node = store.update(NODES, "", "n", node)
    assert node["metadata"]["generation"] == 1
    node["spec"] = {"unschedulable": True}
    assert store.update(NODES, "", "n", node)["metadata"]["generation"] == 2


def test_watches_see_selector_transitions_and_resume() -> None:
    store = Store()
    watcher = store.watch(CONFIGMAPS, "ns", None, label_selector("app=web"))
    store.create(CONFIGMAPS, configmap("a", app="web"))
    stored = store.create(CONFIGMAPS, configmap("b", app="db"))
    store.update(CONFIGMAPS, "ns", "b", {**stored, "metadata": {**stored["metadata"], "labels": {"app": "web"}}})
    current = store.get(CONFIGMAPS, "ns", "a")
    store.update(CONFIGMAPS, "ns", "a", {**current, "metadata": {**current["metadata"], "labels": {}}})
    assert drain(watcher) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]  # b joins, a leaves
    resumed = store.watch(CONFIGMAPS, "ns", stored["metadata"]["resourceVersion"], label_selector(None))
    assert [name for _, name in drain(resumed)] == ["b", "a"]


def test_a_watch_from_before_compaction_is_gone() -> None:
    store = Store()
    created = store.create(CONFIGMAPS, configmap("a"))
    store.compact()
    with pytest.raises(APIError) as gone:
        store.watch(CONFIGMAPS, "ns", created["metadata"]["resourceVersion"], label_selector(None))
    assert gone.value.code == 410


async def test_a_watch_times_out_only_with_nothing_pending() -> None:
    # wait_for(queue.get(), t) can raise TimeoutError with an event already queued (deterministic
    # at t=0; on 3.12+ also when the put and the timeout share a loop iteration). The server then
    # sent a bookmark past that event and a client resuming from it lost the event for good.
    store = Store()
    watcher = store.watch(CONFIGMAPS, "ns", None, label_selector(None))
    store.create(CONFIGMAPS, configmap("a"))
    event = await watcher.next(0)
    assert event is not None and event["object"]["metadata"]["name"] == "a"
    with pytest.raises(TimeoutError):
        await watcher.next(0)
    store.stop_watch(watcher)
    assert await watcher.next(0) is None


def pod(name: str, namespace: str, node: str | None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "i"}], **({"nodeName": node} if node else {})}}


def test_a_list_by_an_indexed_field_finds_what_a_scan_finds_through_every_kind_of_write() -> None:
    store = Store()
    namespaces = resource("", "namespaces")
    store.create(namespaces, {"metadata": {"name": "gone"}})

    def listed(selector: str, namespace: str | None = None) -> list[str]:
        parsed = field_selector(selector, "pods")
        by_index = store.list(PODS, namespace, parsed, parsed.equalities)
        scanned = store.list(PODS, namespace, parsed)  # no equalities: every pod looked at
        assert by_index == scanned
        return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in by_index]

    store.create(PODS, pod("b", "ns", "node-1"))
    store.create(PODS, pod("a", "ns", "node-1"))
    store.create(PODS, pod("c", "gone", "node-1"))
    store.create(PODS, pod("pending", "ns", None))
    assert listed("spec.nodeName=node-1") == ["gone/c", "ns/a", "ns/b"]  # ordered as any list
    assert listed("spec.nodeName=node-1", "ns") == ["ns/a", "ns/b"]
    assert listed("spec.nodeName=node-1,metadata.name!=a") == ["gone/c", "ns/b"]
    assert listed("spec.nodeName=") == ["ns/pending"]  # unset reads as empty, as in kube-apiserver
    bound = store.get(PODS, "ns", "pending")
    bound["spec"]["nodeName"] = "node-2"  # bound: moves from one value to another
    store.update(PODS, "ns", "pending", bound)
    assert listed("spec.nodeName=") == [] and listed("spec.nodeName=node-2") == ["ns/pending"]
    store.mark_deleting(PODS, "ns", "a", {"deletionTimestamp": "2026-11-28T00:00:00Z",
                                          "deletionGracePeriodSeconds": 30})
    assert listed("spec.nodeName=node-1") == ["gone/c", "ns/a", "ns/b"]  # Terminating is still there
    store.delete(PODS, "ns", "a")
    store.delete(namespaces, "", "gone")  # its pods with it
    assert listed("spec.nodeName=node-1") == ["ns/b"]
    assert listed("spec.nodeName=node-9") == []
    assert store._indexes[(PODS.key, "spec.nodeName")] == {"node-1": {("ns", "b")}, "node-2": {("ns", "pending")}}


def test_a_change_of_json_type_alone_is_a_change() -> None:
    # 1, 1.0 and true are equal in Python, not in JSON: each is a write, as etcd sees other bytes.
    store = Store()
    created = store.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}, "data": {}, "binaryData": {},
                                        "extra": {"n": 1}})
    versions = [created["metadata"]["resourceVersion"]]
    for value in (1.0, True, True):
        current = store.get(CONFIGMAPS, "ns", "a")
        versions.append(store.update(CONFIGMAPS, "ns", "a", {**current, "extra": {"n": value}})
                        ["metadata"]["resourceVersion"])
    assert versions[0] < versions[1] < versions[2] == versions[3]  # the last sets what is there: no write


def test_readers_of_stored_objects_get_them_and_listers_get_copies() -> None:
    store = Store()
    store.create(CONFIGMAPS, configmap("a", app="x"))
    store.create(CONFIGMAPS, configmap("b"))
    assert store.stored(CONFIGMAPS, "ns", "a") is store.stored(CONFIGMAPS, "ns", "a")
    assert [o["metadata"]["name"] for o in store.select(CONFIGMAPS, "ns", label_selector("app=x"))] == ["a"]
    assert store.select(CONFIGMAPS, None)[0] is store.stored(CONFIGMAPS, "ns", "a")
    listed = store.list(CONFIGMAPS, None)
    assert listed == store.select(CONFIGMAPS, None) and listed[0] is not store.stored(CONFIGMAPS, "ns", "a")
    listed[0]["data"]["k"] = "changed"  # a copy: the store's object is untouched
    assert store.get(CONFIGMAPS, "ns", "a")["data"] == {"k": "v"}
    with pytest.raises(APIError) as missing:
        store.stored(CONFIGMAPS, "ns", "c")
    assert missing.value.code == 404
