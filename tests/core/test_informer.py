"""The shared informer: cache and indexes (driven directly), and list + watch + 410 re-list
against the embedded API server with the official client."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client

from proxyfleet.core.informer import SYNCED, Informer, by_internal_ip, internal_ip
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.support import wait_until


def node(name: str, address: str | None, unschedulable: bool = False) -> dict[str, Any]:
    status = {"addresses": [{"type": "Hostname", "address": name}]
              + ([{"type": "InternalIP", "address": address}] if address else [])}
    return {"metadata": {"name": name}, "spec": {"unschedulable": unschedulable}, "status": status}


def offline() -> tuple[Informer, list[tuple[str, str]]]:
    heard: list[tuple[str, str]] = []
    informer = Informer(None, lambda: None, name="nodes",  # type: ignore[arg-type]
                        indexers={"address": by_internal_ip},
                        handler=lambda event, obj: heard.append((event, obj.get("metadata", {}).get("name", "*"))))
    return informer, heard


def test_internal_ip_ignores_other_address_types() -> None:
    assert internal_ip(node("a", "127.10.0.1")) == "127.10.0.1"
    assert internal_ip(node("a", None)) is None
    assert by_internal_ip(node("a", None)) == []


async def test_cache_and_index_follow_every_change_in_order() -> None:
    informer, heard = offline()
    informer.apply(SYNCED, {"items": [node("a", "127.10.0.1"), node("b", "127.10.0.2")]})
    assert informer.synced.is_set()
    assert informer.first("address", "127.10.0.2")["metadata"]["name"] == "b"  # type: ignore[index]
    informer.apply("MODIFIED", node("b", "127.10.0.9"))  # its address changed: the old entry goes
    assert informer.first("address", "127.10.0.2") is None
    assert informer.first("address", "127.10.0.9") is informer.get("b")
    informer.apply("ADDED", node("c", "127.10.0.9"))  # two nodes claim one address
    assert {n["metadata"]["name"] for n in informer.by_index("address", "127.10.0.9")} == {"b", "c"}
    informer.apply("DELETED", node("b", "127.10.0.9"))
    assert informer.get("b") is None and informer.by_index("address", "127.10.0.9") == [informer.get("c")]
    informer.apply(SYNCED, {"items": [node("d", "127.10.0.4")]})  # a re-list replaces everything
    assert sorted(informer.cache) == ["d"] and informer.first("address", "127.10.0.1") is None
    assert heard == [(SYNCED, "*"), ("MODIFIED", "b"), ("ADDED", "c"), ("DELETED", "b"), (SYNCED, "*")]


async def test_values_lists_only_what_some_cached_object_holds() -> None:
    informer, _ = offline()
    informer.apply(SYNCED, {"items": [node("a", "127.10.0.1"), node("b", "127.10.0.2"), node("c", None)]})
    assert sorted(informer.values("address")) == ["127.10.0.1", "127.10.0.2"]
    informer.apply("MODIFIED", node("b", "127.10.0.9"))  # the value it left is gone, not an empty entry
    informer.apply("DELETED", node("a", "127.10.0.1"))
    assert sorted(informer.values("address")) == ["127.10.0.9"]
    informer.apply("ADDED", node("d", "127.10.0.9"))
    informer.apply("DELETED", node("b", "127.10.0.9"))  # another node still holds it
    assert informer.values("address") == ["127.10.0.9"]


def configmap(name: str, value: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"v": value})


# The API server runs on this test's event loop: client calls go to a thread.
async def test_lists_watches_and_relists_after_410(api: client.ApiClient, plane: ControlPlane) -> None:
    core = client.CoreV1Api(api)
    await asyncio.to_thread(core.create_namespaced_config_map, "default", configmap("before", "1"))
    heard: list[str] = []
    informer = Informer(api, core.list_namespaced_config_map, "default", name="configmaps",
                        handler=lambda event, obj: heard.append(event))
    informer.start()
    try:
        await wait_until(lambda: informer.synced.is_set(), what="the first list")
        assert informer.get("before") is not None and informer.relists == 1
        await asyncio.to_thread(core.create_namespaced_config_map, "default", configmap("after", "1"))
        await wait_until(lambda: informer.get("after") is not None, what="the watch delivering ADDED")
        await asyncio.to_thread(core.patch_namespaced_config_map, "after", "default", {"data": {"v": "2"}})
        await wait_until(lambda: (informer.get("after") or {}).get("data", {}).get("v") == "2",
                         what="the watch delivering MODIFIED")
        plane.store.compact()
        await plane.server.close_watches()  # resuming from the old version now gets 410 Gone
        await asyncio.to_thread(core.create_namespaced_config_map, "default", configmap("while-gone", "1"))
        await wait_until(lambda: informer.relists >= 2 and informer.get("while-gone") is not None, what="a re-list after 410")
        await asyncio.to_thread(core.delete_namespaced_config_map, "before", "default")
        await wait_until(lambda: informer.get("before") is None, what="the watch delivering DELETED")
        assert heard.count(SYNCED) == informer.relists
    finally:
        informer.stop()


async def test_an_api_server_restart_with_compaction_is_survived(api: client.ApiClient, plane: ControlPlane) -> None:
    core = client.CoreV1Api(api)
    informer = Informer(api, core.list_namespaced_config_map, "default", name="configmaps")
    informer.start()
    try:
        await wait_until(lambda: informer.synced.is_set(), what="the first list")
        port = plane.port
        await plane.restart()  # connections cut, history compacted: the resumed watch gets 410
        assert plane.port == port
        await asyncio.to_thread(core.create_namespaced_config_map, "default", configmap("after-restart", "1"))
        await wait_until(lambda: informer.relists >= 2 and informer.get("after-restart") is not None, what="a re-list after the restart")
    finally:
        informer.stop()


async def test_a_stopped_informers_thread_ends_at_once(api: client.ApiClient) -> None:
    # Stopping shuts the watch's socket down; join says whether the thread has ended (a process
    # that exits with the thread inside a TLS read can abort).
    informer = Informer(api, client.CoreV1Api(api).list_namespaced_config_map, "default", name="configmaps")
    informer.start()
    await asyncio.wait_for(informer.synced.wait(), 10)
    await wait_until(lambda: informer._watch is not None)
    informer.stop()
    assert await asyncio.to_thread(informer.join, 10.0)
