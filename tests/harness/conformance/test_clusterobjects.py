"""What the judge reads from the API server itself, against the embedded control plane through the
official client: Nodes by InternalIP, Warning Events about Nodes since a moment, the trusted CA
ConfigMap, and every place a proxy credential must not show up (by Node where the place is about
one), the install-config excepted."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from typing import Any

from kubernetes import client

from proxyfleet.core.contract import OPERATOR_NAMESPACE, TRUSTED_CA
from proxyfleet.harness.conformance import clusterobjects
from proxyfleet.harness.conformance.clusterobjects import node_name

SECRET = "S3cret-Passw0rd"


async def call(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


async def _node(api: client.ApiClient, name: str, address: str | None, annotations: dict[str, str] | None = None) -> None:
    status = {"addresses": [{"type": "InternalIP", "address": address}]} if address else {}
    await call(client.CoreV1Api(api).create_node,
               {"metadata": {"name": name, "annotations": annotations or {}}, "status": status})


async def _event(api: client.ApiClient, name: str, kind: str, involved: str, kind_of_event: str, message: str,
                 when: dt.datetime) -> None:
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=name, namespace=OPERATOR_NAMESPACE),
        involved_object=client.V1ObjectReference(kind=kind, name=involved),
        reason="ProxyApplyFailed", message=message, type=kind_of_event, last_timestamp=when)
    await call(client.CoreV1Api(api).create_namespaced_event, OPERATOR_NAMESPACE, body)


async def test_nodes_are_found_by_internal_ip_and_named_by_it(api: client.ApiClient) -> None:
    await _node(api, "win-0001", "10.1.0.5")
    await _node(api, "joining", None)  # no address yet: nobody's
    nodes = await clusterobjects.node_objects(api)
    assert set(nodes) == {"10.1.0.5"}
    assert node_name(nodes, "10.1.0.5") == "win-0001"
    assert node_name(nodes, "10.1.0.9") == "10.1.0.9"  # no Node yet: the address stands for it


async def test_warning_events_about_nodes_since_a_moment(api: client.ApiClient) -> None:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    await _event(api, "old", "Node", "win-0001", "Warning", "before the step", now - dt.timedelta(minutes=5))
    await _event(api, "new", "Node", "win-0001", "Warning", "host key changed", now)
    await _event(api, "normal", "Node", "win-0001", "Normal", "applied", now)
    await _event(api, "pod", "Pod", "win-0001", "Warning", "about a Pod of that name", now)
    found = await clusterobjects.warning_events(api, now + dt.timedelta(microseconds=500))
    assert {name: [text for _, text in events] for name, events in found.items()} == {
        "win-0001": ["ProxyApplyFailed: host key changed"]}  # whole seconds: the same second counts


async def test_the_trusted_ca_configmap_or_none(api: client.ApiClient) -> None:
    assert await clusterobjects.trusted_ca_configmap(api) is None  # no operator created it yet
    await call(client.CoreV1Api(api).create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": TRUSTED_CA}, "data": {"ca-bundle.crt": "bundle"}})
    found = await clusterobjects.trusted_ca_configmap(api)
    assert found is not None and found["data"] == {"ca-bundle.crt": "bundle"}


async def test_a_credential_is_found_wherever_ordinary_users_read_it(api: client.ApiClient) -> None:
    await _node(api, "win-0001", "10.1.0.5", {"proxyfleet.io/proxy": f"http://u:{SECRET}@proxy:3128"})
    await _node(api, "win-0002", "10.1.0.6")
    now = dt.datetime.now(dt.UTC)
    await _event(api, "about-node", "Node", "win-0002", "Warning", f"proxy u:{SECRET} refused", now)
    await call(client.CoreV1Api(api).create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": "leaky"}, "data": {"proxy": f"u%3A{SECRET}"}})  # percent-encoded
    token = base64.b64encode(f"u:{SECRET}".encode()).decode()
    await call(client.CoreV1Api(api).create_namespaced_secret, OPERATOR_NAMESPACE,
               {"metadata": {"name": "auth"}, "data": {"header": base64.b64encode(f"Basic {token}".encode()).decode()}})
    # The installer keeps the install-config (and its proxy URL) where only admins read it.
    await call(client.CoreV1Api(api).patch_namespaced_config_map, "cluster-config-v1", "kube-system",
               {"data": {"install-config": f"proxy: {{httpProxy: 'http://u:{SECRET}@proxy:3128'}}"}})
    nodes = await clusterobjects.node_objects(api)
    found = await clusterobjects.credential_leaks(api, nodes, {SECRET},
                                                  lambda: [("the reconciler's log", f"password {SECRET}")])
    assert found["10.1.0.5"] == ["Node win-0001 annotation proxyfleet.io/proxy"]
    assert found["10.1.0.6"] == [f"Event {OPERATOR_NAMESPACE}/ProxyApplyFailed"]
    assert sorted(found[""]) == [f"ConfigMap {OPERATOR_NAMESPACE}/leaky", f"Secret {OPERATOR_NAMESPACE}/auth",
                                 "the reconciler's log"]


async def test_nothing_is_read_when_there_is_no_credential_to_look_for(api: client.ApiClient) -> None:
    def logs() -> list[tuple[str, str]]:
        raise AssertionError("the log was read with nothing to look for")

    assert await clusterobjects.credential_leaks(api, {}, set(), logs) == {}
