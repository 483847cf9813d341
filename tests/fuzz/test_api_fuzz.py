"""Property: every request the embedded API server gets is answered like kube-apiserver would —
an object, a list, a watch stream, or a ``Status`` whose code is the HTTP status — never a
plain-text error or a 500, whatever the path, query, media type and body."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxyfleet.simulators.controlplane.authorization import ADMIN, NodeTokens
from proxyfleet.simulators.controlplane.install import load_install_config, plan
from proxyfleet.simulators.controlplane.resources import RESOURCE_TYPES
from proxyfleet.simulators.controlplane.server import APIServer
from proxyfleet.simulators.controlplane.store import Store
from tests.fuzz.strategies import EXAMPLES, json_documents

TOKENS = {"admin": ADMIN}
NODE_TOKENS = NodeTokens()
SEGMENTS = ["api", "apis", "v1", "config.openshift.io", "coordination.k8s.io", "namespaces", "default",
            "openshift-config", "configmaps", "secrets", "nodes", "proxies", "cluster", "status", "leases",
            "events", "x", "", "..", "%2F", "win-0001"]
QUERIES = st.dictionaries(st.sampled_from(["watch", "timeoutSeconds", "limit", "continue", "labelSelector",
                                           "fieldSelector", "resourceVersion", "dryRun", "fieldValidation",
                                           "allowWatchBookmarks", "resourceVersionMatch"]),
                          st.one_of(st.sampled_from(["true", "True", "0", "1", "abc", "nan", "-1", "All", "Strict",
                                                     "a=b", "metadata.name=x", "Exact", "9" * 30]),
                                    st.text(max_size=10)), max_size=3)
MEDIA = st.sampled_from(["application/json", "application/merge-patch+json", "application/json-patch+json",
                         "application/strategic-merge-patch+json", "application/apply-patch+yaml", "text/plain",
                         "", "application/json; charset=utf-8"])
BODIES = st.one_of(json_documents().map(lambda d: json.dumps(d).encode()), st.binary(max_size=64),
                   st.just(b"[" * 3000 + b"]" * 3000), st.just(b'{"a":' + b"9" * 5000 + b"}"))


def _store() -> Store:
    store = Store()
    by_key = {f"{t.group}/{t.plural}": t for t in RESOURCE_TYPES}
    for key, obj in plan(load_install_config(None)).objects:
        store.create(by_key[key], obj)
    return store


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
       segments=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=7), query=QUERIES, media=MEDIA,
       body=BODIES, token=st.sampled_from(["admin", "node", "nobody"]))
def test_every_request_gets_a_kubernetes_answer(method: str, segments: list[str], query: dict[str, str],
                                                media: str, body: bytes, token: str) -> None:
    async def go() -> tuple[int, bytes, str]:
        server = APIServer(_store(), TOKENS, bookmark_interval=0.05, node_tokens=NODE_TOKENS)
        bearer = {"admin": "admin", "node": NODE_TOKENS.token("win-0001"), "nobody": "x"}[token]
        query_with_timeout = {**query, "timeoutSeconds": query.get("timeoutSeconds", "0")} \
            if query.get("watch") else query  # a watch ends on its own
        async with TestClient(TestServer(server.application())) as client:
            headers: dict[str, Any] = {"Authorization": f"Bearer {bearer}"}
            if media:
                headers["Content-Type"] = media
            async with asyncio.timeout(10):
                response = await client.request(method, "/" + "/".join(segments).lstrip("/"), params=query_with_timeout,
                                                headers=headers, data=body if method in ("POST", "PUT", "PATCH") else None)
                text = await response.read()
            await server.close_watches()
            return response.status, text, response.headers.get("Content-Type", "")

    status, text, content_type = asyncio.run(go())
    assert status != 500, text[:300]
    if method == "HEAD":
        return  # no body to judge
    if status >= 400 and content_type.startswith("application/json"):
        answer = json.loads(text)
        assert answer["kind"] == "Status" and answer["code"] == status, answer
    elif status >= 400:
        assert status in (404, 405), (status, text[:200])  # aiohttp's own answers for impossible routes
