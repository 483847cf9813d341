"""The administrator's actions, through the official client against the embedded API server:
each writes exactly the object an administrator would, and nothing else."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
import trustme
from kubernetes import client

from proxyfleet.core.contract import (
    BUNDLE_KEY,
    INJECT_LABEL,
    INSTANCES,
    KEY_FIELD,
    KEY_SECRET,
    OPENSHIFT_CONFIG,
    OPERATOR_NAMESPACE,
    PROXY,
    TRUSTED_CA,
)
from proxyfleet.harness.lab import admin
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.controlplane.resources import CONFIGMAPS, NODES


async def call(function: Any, *args: Any) -> Any:
    # The API server shares this event loop: a blocking client call must run in a thread.
    return await asyncio.to_thread(function, *args)


async def test_instances_and_key_are_created_then_replaced(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await admin.set_instances(api, [("127.20.0.1", "Administrator")])
    await admin.set_instances(api, [("127.20.0.2", "Administrator"), ("127.20.0.3", "admin")])
    instances = (await call(core.read_namespaced_config_map, INSTANCES, OPERATOR_NAMESPACE)).data
    assert instances == {"127.20.0.2": "username=Administrator", "127.20.0.3": "username=admin"}
    await admin.set_ssh_key(api, b"-----BEGIN OPENSSH PRIVATE KEY-----\n")
    secret = await call(core.read_namespaced_secret, KEY_SECRET, OPERATOR_NAMESPACE)
    assert base64.b64decode(secret.data[KEY_FIELD]) == b"-----BEGIN OPENSSH PRIVATE KEY-----\n"


async def test_set_proxy_replaces_the_spec_and_empty_values_unset_it(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    await admin.set_trusted_ca(api, trustme.CA().cert_pem.bytes().decode())
    await admin.set_proxy(api, http_proxy="http://p.corp:3128", https_proxy="http://p.corp:3128",
                          no_proxy=".corp", trusted_ca="corp-ca", readiness_endpoints=["https://quay.io"])
    spec = (await call(custom.get_cluster_custom_object, *PROXY))["spec"]
    assert spec == {"httpProxy": "http://p.corp:3128", "httpsProxy": "http://p.corp:3128", "noProxy": ".corp",
                    "trustedCA": {"name": "corp-ca"}, "readinessEndpoints": ["https://quay.io"]}
    bundle = await call(client.CoreV1Api(api).read_namespaced_config_map, "corp-ca", OPENSHIFT_CONFIG)
    assert BUNDLE_KEY in bundle.data
    await admin.set_proxy(api)
    assert (await call(custom.get_cluster_custom_object, *PROXY))["spec"] == {"trustedCA": {"name": ""}}


async def test_set_proxy_changes_nothing_but_the_proxy_object(plane: ControlPlane, api: client.ApiClient) -> None:
    before = {kind: plane.store.list(kind, None) for kind in (CONFIGMAPS, NODES)}
    await admin.set_proxy(api, https_proxy="http://p.corp:3128")
    assert {kind: plane.store.list(kind, None) for kind in before} == before


async def test_cordon_marks_the_node_unschedulable(plane: ControlPlane, api: client.ApiClient) -> None:
    await call(client.CoreV1Api(api).create_node, client.V1Node(metadata=client.V1ObjectMeta(name="win-0001")))
    await admin.cordon(api, "win-0001")
    [node] = await admin.nodes(api)
    assert node["spec"]["unschedulable"] is True
    await admin.cordon(api, "win-0001", cordoned=False)
    assert (await admin.nodes(api))[0]["spec"].get("unschedulable") in (False, None)


async def test_one_node_is_read_fresh_as_plain_json(api: client.ApiClient) -> None:
    await call(client.CoreV1Api(api).create_node, client.V1Node(metadata=client.V1ObjectMeta(name="win-0002")))
    await admin.cordon(api, "win-0002")
    read = await admin.node(api, "win-0002")
    assert read is not None and read["metadata"]["name"] == "win-0002" and read["spec"]["unschedulable"] is True
    assert await admin.node(api, "win-none") is None


async def test_tampering_with_the_injected_bundle(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=TRUSTED_CA, labels={INJECT_LABEL: "true"})))
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=False)
    found = await call(core.read_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE)
    assert INJECT_LABEL not in (found.metadata.labels or {})
    await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=True)
    with pytest.raises(LookupError, match="does not exist: there is no label to remove"):
        await admin.tamper_trusted_ca(api, OPERATOR_NAMESPACE, delete=False)


async def test_instances_read_back_as_address_and_user(api: client.ApiClient) -> None:
    assert await admin.instances(api) == {}  # no windows-instances yet
    await admin.set_instances(api, [("10.0.0.5", "Administrator"), ("10.0.0.6", "admin")])
    assert await admin.instances(api) == {"10.0.0.5": "Administrator", "10.0.0.6": "admin"}
