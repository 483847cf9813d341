"""Reading the API as the server's JSON: a list, a read and a custom object come back as plain
dicts; a watch's events carry the parsed JSON, never a client model (against the lab's API server)."""

from __future__ import annotations

import asyncio
import threading

from kubernetes import client

from proxyfleet.core.apijson import RawWatch, raw_json


async def test_answers_are_the_servers_json(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="plain"), data={"key": "value"})
    await asyncio.to_thread(core.create_namespaced_config_map, "default", body)
    read = await asyncio.to_thread(raw_json, core.read_namespaced_config_map, "plain", "default")
    assert type(read) is dict and read["data"] == {"key": "value"} and read["metadata"]["name"] == "plain"
    listed = await asyncio.to_thread(raw_json, core.list_namespaced_config_map, "default")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["plain"]
    assert listed["metadata"]["resourceVersion"]


async def test_watch_events_are_plain_json(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    events: list[dict[str, object]] = []
    done = threading.Event()
    watcher = RawWatch()  # type: ignore[no-untyped-call]

    def follow() -> None:
        for event in watcher.stream(core.list_namespaced_config_map, "default", timeout_seconds=30):  # type: ignore[no-untyped-call]
            events.append(event)
            if event["type"] == "ADDED":
                break
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="watched"), data={"k": "v"})
    await asyncio.to_thread(core.create_namespaced_config_map, "default", body)
    assert await asyncio.to_thread(done.wait, 30)
    watcher.stop()  # type: ignore[no-untyped-call]
    [added] = events
    assert type(added["object"]) is dict and added["object"] is added["raw_object"]
    assert added["object"]["data"] == {"k": "v"}  # type: ignore[index]
