"""The API server through the official ``kubernetes`` client and raw HTTPS: discovery, CRUD,
conflicts, watches (resume, 410, bookmarks), selectors, patches, status, bad requests."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.simulators.controlplane.apirequests import raw
from tests.support import wait_until


def t(function: Any, *args: Any, **kwargs: Any) -> Any:
    return asyncio.to_thread(function, *args, **kwargs)


async def test_discovery(api: client.ApiClient) -> None:
    version = await t(client.VersionApi(api).get_code)
    assert version.git_version.startswith("v1.")
    core = await t(client.CoreV1Api(api).get_api_resources)
    assert {r.name for r in core.resources} >= {"namespaces", "configmaps", "secrets", "nodes",
                                                  "nodes/status", "events"}
    groups = await t(client.ApisApi(api).get_api_versions)
    assert {g.name for g in groups.groups} >= {"config.openshift.io", "coordination.k8s.io",
                                               "events.k8s.io"}
    openshift = await t(client.CustomObjectsApi(api).get_api_resources, "config.openshift.io", "v1")
    by_name = {r.name: r for r in openshift.resources}
    assert by_name["proxies"].namespaced is False and "proxies/status" in by_name
    assert by_name["clusteroperators"].short_names == ["co"]


async def test_crud_and_conflicts(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings", labels={"app": "x"}),
                              data={"a": "1"})
    created = await t(core.create_namespaced_config_map, "default", body)
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as exists:
        await t(core.create_namespaced_config_map, "default", body)
    assert (exists.value.status, json.loads(exists.value.body)["reason"]) == (409, "AlreadyExists")
    created.data["a"] = "2"
    updated = await t(core.replace_namespaced_config_map, "settings", "default", created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data["a"] = "3"  # stale resourceVersion
    with pytest.raises(ApiException) as stale:
        await t(core.replace_namespaced_config_map, "settings", "default", created)
    assert stale.value.status == 409
    assert "the object has been modified" in json.loads(stale.value.body)["message"]
    same = await t(core.replace_namespaced_config_map, "settings", "default", updated)
    assert same.metadata.resource_version == updated.metadata.resource_version  # a no-op write
    patched = await t(core.patch_namespaced_config_map, "settings", "default", {"data": {"b": "x"}})
    assert patched.data == {"a": "2", "b": "x"}
    status = await t(core.delete_namespaced_config_map, "settings", "default")
    # kubernetes 37 returns the Status as a dict, 36 as a V1Status
    assert (status["status"] if isinstance(status, dict) else status.status) == "Success"
    with pytest.raises(ApiException) as gone:
        await t(core.read_namespaced_config_map, "settings", "default")
    assert (gone.value.status, json.loads(gone.value.body)["message"]) == (404, 'configmaps "settings" not found')
    with pytest.raises(ApiException) as no_namespace:
        await t(core.create_namespaced_config_map, "nope", body)
    assert no_namespace.value.status == 404


async def test_label_and_field_selectors(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    for name, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db"}), ("c", {})):
        await t(core.create_namespaced_config_map, "default",
                client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels)))

    async def names(**kwargs: Any) -> list[str]:
        listed = await t(core.list_namespaced_config_map, "default", **kwargs)
        return [i.metadata.name for i in listed.items]

    assert await names(label_selector="tier=web") == ["a"]
    assert await names(label_selector="tier in (web,db)") == ["a", "b"]
    assert await names(label_selector="tier,!env") == ["b"]
    assert await names(label_selector="tier!=web") == ["b", "c"]
    assert await names(field_selector="metadata.name=c") == ["c"]
    with pytest.raises(ApiException) as bad:
        await names(field_selector="spec.bogus=1")
    assert bad.value.status == 400
    everywhere = await t(core.list_config_map_for_all_namespaces, field_selector="metadata.namespace=kube-system")
    assert [i.metadata.name for i in everywhere.items] == ["cluster-config-v1"]


async def test_generation_and_status_subresource(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    args = ("config.openshift.io", "v1", "proxies", "cluster")
    before = await t(custom.get_cluster_custom_object, *args)
    after = await t(custom.patch_cluster_custom_object, *args, {"spec": {"noProxy": ".corp"},
                                                                   "status": {"noProxy": "forged"}})
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert after.get("status", {}).get("noProxy") != "forged"  # status only through /status
    labelled = await t(custom.patch_cluster_custom_object, *args, {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == after["metadata"]["generation"]
    status = await t(custom.patch_cluster_custom_object_status, *args, {"status": {"noProxy": "direct"}})
    assert status["status"]["noProxy"] == "direct"


async def test_json_patch_and_unsupported_patch_types(control_plane: ControlPlane) -> None:
    patch = json.dumps([{"op": "add", "path": "/spec/noProxy", "value": ".svc"},
                        {"op": "test", "path": "/spec/noProxy", "value": ".svc"}]).encode()
    code, body, _ = await raw(control_plane, "PATCH", "/apis/config.openshift.io/v1/proxies/cluster", patch,
                        "application/json-patch+json")
    assert code == 200 and body["spec"]["noProxy"] == ".svc"
    bad_test = json.dumps([{"op": "test", "path": "/spec/noProxy", "value": "other"}]).encode()
    code, body, _ = await raw(control_plane, "PATCH", "/apis/config.openshift.io/v1/proxies/cluster", bad_test,
                        "application/json-patch+json")
    assert code == 422
    code, body, _ = await raw(control_plane, "PATCH", "/apis/config.openshift.io/v1/proxies/cluster", b"{}",
                        "application/apply-patch+yaml")
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")


async def test_watch_resumes_from_a_resource_version(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    listed = await t(core.list_namespaced_config_map, "default")
    rv = listed.metadata.resource_version
    await t(core.create_namespaced_config_map, "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
    await t(core.patch_namespaced_config_map, "w1", "default", {"data": {"k": "v"}})
    await t(core.delete_namespaced_config_map, "w1", "default")

    def collect() -> list[tuple[str, str]]:
        events = []
        stream = watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv,
                                      timeout_seconds=5)
        for event in stream:
            events.append((event["type"], event["object"].metadata.name))
            if len(events) == 3:
                break
        return events

    assert await t(collect) == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def _raw_lines(plane: ControlPlane, path: str) -> list[dict[str, Any]]:
    """GET ``path`` and parse the body as JSON lines (a watch) or one JSON document (a list)."""

    def fetch() -> bytes:
        context = ssl.create_default_context(cadata=plane.ca_pem.decode())
        request = urllib.request.Request(plane.url + path)
        request.add_header("Authorization", f"Bearer {plane.admin_token}")
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return bytes(response.read())

    return [json.loads(line) for line in (await asyncio.to_thread(fetch)).splitlines() if line.strip()]


@pytest.mark.parametrize("value", ["True", "true", "1", "t", "TRUE"])
async def test_watch_flag_is_decoded_like_kube_apiserver(api: client.ApiClient, control_plane: ControlPlane,
                                                         value: str) -> None:
    # kubernetes 36.x (what pip picks on Python 3.12 beside mitmproxy 12) sends watch=True; a
    # server that answers it with a list leaves every watch of the reconciler silent.
    core = client.CoreV1Api(api)
    rv = (await t(core.list_namespaced_config_map, "default")).metadata.resource_version
    await t(core.create_namespaced_config_map, "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w")))
    lines = await _raw_lines(control_plane, f"/api/v1/namespaces/default/configmaps?watch={value}"
                                            f"&resourceVersion={rv}&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "w")]


@pytest.mark.parametrize("value", ["False", "false", "0", "FALSE"])
async def test_a_false_watch_flag_lists(control_plane: ControlPlane, value: str) -> None:
    lines = await _raw_lines(control_plane, f"/api/v1/namespaces/default/configmaps?watch={value}")
    assert [body["kind"] for body in lines] == ["ConfigMapList"]


@pytest.mark.parametrize("query", ["watch=true&timeoutSeconds=abc", "watch=1&timeoutSeconds=nan",
                                   "timeoutSeconds=1e3", "watch=true&timeoutSeconds=" + "9" * 5000])
async def test_a_bad_timeout_is_a_bad_request(control_plane: ControlPlane, query: str) -> None:
    code, body, _ = await raw(control_plane, "GET", f"/api/v1/namespaces/default/configmaps?{query}")
    assert (code, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    assert "strconv.ParseInt" in body["message"]


async def test_watch_from_a_compacted_version_is_gone(api: client.ApiClient, control_plane: ControlPlane) -> None:
    core = client.CoreV1Api(api)
    old = (await t(core.list_namespaced_config_map, "default")).metadata.resource_version
    control_plane.store.compact()

    def watch_old() -> None:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old,
                                      timeout_seconds=5):
            pass

    with pytest.raises(ApiException) as expired:
        await t(watch_old)
    assert expired.value.status == 410


async def test_watch_bookmarks_and_label_transitions(control_plane: ControlPlane, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    rv = (await t(core.list_namespaced_config_map, "default")).metadata.resource_version
    events: list[dict[str, Any]] = []
    done = threading.Event()

    def follow() -> None:
        stream = watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv,
                                      label_selector="inject=true", allow_watch_bookmarks=True,
                                      timeout_seconds=10, _preload_content=False)
        for event in stream:
            events.append(event)
            if any(e["type"] == "BOOKMARK" for e in events) and sum(e["type"] == "DELETED" for e in events):
                done.set()
                break

    follower = asyncio.create_task(asyncio.to_thread(follow))
    await t(core.create_namespaced_config_map, "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name="tagged", labels={"inject": "true"})))
    await t(core.patch_namespaced_config_map, "tagged", "default", {"metadata": {"labels": {"inject": None}}})
    await asyncio.wait_for(follower, 15)
    kinds = [e["type"] for e in events if e["type"] != "BOOKMARK"]
    assert kinds == ["ADDED", "DELETED"]  # losing the label reads as a deletion to this watch


async def test_authentication_is_required(control_plane: ControlPlane) -> None:
    code, body, _ = await raw(control_plane, "GET", "/api/v1/namespaces", token=None)
    assert (code, body["reason"], body["code"]) == (401, "Unauthorized", 401)
    code, _, _ = await raw(control_plane, "GET", "/api/v1/namespaces", token="wrong")
    assert code == 401
    code, _, _ = await raw(control_plane, "GET", "/version", token=None)
    assert code == 200


@pytest.mark.parametrize(("method", "path", "body", "code", "reason"), [
    ("POST", "/api/v1/namespaces/default/configmaps", b"{not json", 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps",
     b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}', 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps",
     b'{"metadata":{"name":"Bad_Name"}}', 422, "Invalid"),
    ("POST", "/api/v1/namespaces/default/configmaps", b'{"metadata":{}}', 422, "Invalid"),
    ("POST", "/api/v1/namespaces/default/configmaps", b'{"metadata":{"name":"n"},"data":{"a":1}}', 400, "BadRequest"),
    ("PUT", "/apis/config.openshift.io/v1/proxies/cluster",
     b'{"metadata":{"name":"cluster"},"spec":{"httpProxy":7}}', 422, "Invalid"),
    ("GET", "/api/v1/widgets", None, 404, "NotFound"),
    ("GET", "/apis/example.com/v1/things", None, 404, "NotFound"),
    ("PUT", "/api/v1/namespaces/default/configmaps", b"{}", 405, "MethodNotAllowed"),
    ("GET", "/api/v1/namespaces/default/configmaps/x/status", None, 404, "NotFound"),
])
async def test_bad_requests_get_real_status_codes(control_plane: ControlPlane, method: str, path: str,
                                                  body: bytes | None, code: int, reason: str) -> None:
    before = control_plane.store.writes
    got, status, _ = await raw(control_plane, method, path, body)
    assert (got, status.get("reason"), status.get("kind")) == (code, reason, "Status")
    assert control_plane.store.writes == before  # nothing stored


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEEP = ("[" * 5000 + "]" * 5000).encode()
NESTED = b'{"metadata":{"name":"n"},"data":' + b'{"a":' * 150 + b'"x"' + b"}" * 150 + b"}"


@pytest.mark.parametrize(("method", "path", "body", "content_type", "code", "reason"), [
    ("POST", CONFIGMAPS, DEEP, "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, NESTED, "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":"n"},"x":' + b"7" * 5000 + b"}", "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":"n"},"x":1e400}', "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":"n"},"x":NaN}', "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":"n"}}', "text/plain", 415, "UnsupportedMediaType"),
    ("POST", CONFIGMAPS, b"metadata: {name: n}", "application/yaml", 415, "UnsupportedMediaType"),
    ("PUT", CONFIGMAPS + "/n", b'{"metadata":{"name":"n"}}', "text/plain", 415, "UnsupportedMediaType"),
    ("POST", CONFIGMAPS, b'{"metadata":{"generateName":5}}', "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":["a"]}}', "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b'{"metadata":{"name":"n","resourceVersion":7}}', "application/json", 400, "BadRequest"),
    ("POST", CONFIGMAPS, b"\xff\xfe", "application/json", 400, "BadRequest"),
    ("PATCH", CONFIGMAPS + "/settings", b'{"data":{"a":"b"}}', "text/plain", 415, "UnsupportedMediaType"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"move","path":"/data/x"}]', "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"copy","path":"/data/x"}]', "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"move","from":"/nope/x","path":"/data/x"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"move","from":"","path":"/data/x"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"copy","from":5,"path":"/data/x"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"add","path":"no-slash","value":1}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"add","path":5,"value":1}]', "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":5,"path":"/a"}]', "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"remove","path":"/metadata/labels/nope"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"add","path":"/data/x/y/z","value":"1"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"add","path":"/metadata/finalizers/01","value":"x"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CONFIGMAPS + "/settings", b'["x"]', "application/json-patch+json", 400, "BadRequest"),
    ("PATCH", CONFIGMAPS + "/settings", b'{"op":"add"}', "application/json-patch+json", 400, "BadRequest"),
    ("PATCH", CONFIGMAPS + "/settings", b'[{"op":"replace","path":"","value":5}]', "application/json-patch+json",
     400, "BadRequest"),
])
async def test_hostile_requests_get_a_status_never_a_crash(
        control_plane: ControlPlane, api: client.ApiClient, method: str, path: str, body: bytes,
        content_type: str, code: int, reason: str) -> None:
    await t(client.CoreV1Api(api).create_namespaced_config_map, "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"a": "1"}))
    before = control_plane.store.writes
    got, status, _ = await raw(control_plane, method, path, body, content_type)
    assert (got, status.get("kind"), status.get("reason")) == (code, "Status", reason), status
    assert control_plane.store.writes == before  # nothing half-applied


async def test_oversized_bodies_are_refused(control_plane: ControlPlane) -> None:
    big = json.dumps({"metadata": {"name": "big"}, "data": {"x": "a" * (4 * 1024 * 1024)}}).encode()
    code, status, _ = await raw(control_plane, "POST", "/api/v1/namespaces/default/configmaps", big)
    assert (code, status["reason"]) == (413, "RequestEntityTooLarge")


async def test_unknown_fields_on_openshift_types(control_plane: ControlPlane) -> None:
    body = json.dumps({"spec": {"httpProxy": "http://p:1", "bogus": True}}).encode()
    code, status, _ = await raw(control_plane, "PATCH", "/apis/config.openshift.io/v1/proxies/cluster?fieldValidation=Strict",
                          body, "application/merge-patch+json")
    assert code == 400 and 'unknown field "spec.bogus"' in status["message"]
    code, stored, headers = await raw(control_plane, "PATCH", "/apis/config.openshift.io/v1/proxies/cluster",
                                body, "application/merge-patch+json")
    assert code == 200 and "bogus" not in stored["spec"] and stored["spec"]["httpProxy"] == "http://p:1"
    assert 'unknown field' in headers.get("Warning", "")


async def test_dry_run_stores_nothing(control_plane: ControlPlane) -> None:
    before = control_plane.store.writes
    code, body, _ = await raw(control_plane, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                        b'{"metadata":{"name":"dry"}}')
    assert code == 201 and body["metadata"]["name"] == "dry"
    assert control_plane.store.writes == before
    code, _, _ = await raw(control_plane, "GET", "/api/v1/namespaces/default/configmaps/dry")
    assert code == 404


async def test_pagination(control_plane: ControlPlane) -> None:
    for index in range(5):
        await raw(control_plane, "POST", "/api/v1/namespaces/default/configmaps",
            json.dumps({"metadata": {"name": f"page-{index}"}}).encode())
    code, first, _ = await raw(control_plane, "GET", "/api/v1/namespaces/default/configmaps?limit=2")
    assert code == 200 and len(first["items"]) == 2 and first["metadata"]["continue"]
    seen = [i["metadata"]["name"] for i in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        _, page, _ = await raw(control_plane, "GET", f"/api/v1/namespaces/default/configmaps?limit=2&continue={token}")
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert seen == [f"page-{i}" for i in range(5)]


async def test_table_output(control_plane: ControlPlane) -> None:
    _, table, _ = await raw(control_plane, "GET", "/apis/config.openshift.io/v1/clusteroperators",
                         headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:5] == ["Name", "Version", "Available",
                                                                   "Progressing", "Degraded"]
    assert table["rows"][0]["cells"][0] == "network"


async def test_a_body_that_arrives_in_pieces_is_read_whole(control_plane: ControlPlane) -> None:
    """kubectl's bodies can span several TLS records; the server must read to the end, not parse
    the first piece (a bundle ConfigMap once failed with "Unterminated string")."""
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pieces"},
                       "data": {"ca-bundle.crt": "x" * 5000}}).encode()
    rest = threading.Event()

    def pieces() -> Any:
        yield body[:100]
        rest.wait(30)  # until the server has started on the request
        yield body[100:]

    started = control_plane.server.stats.requests
    reply = asyncio.create_task(raw(control_plane, "POST", "/api/v1/namespaces/default/configmaps",
                                    pieces()))  # type: ignore[arg-type]
    try:
        await wait_until(lambda: control_plane.server.stats.requests > started or reply.done(),
                         what="the server to start on the request")
    finally:
        rest.set()
    code, created, _ = await reply
    assert code == 201, created
    assert len(created["data"]["ca-bundle.crt"]) == 5000
