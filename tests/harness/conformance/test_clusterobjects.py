"""What the judge reads from the API server itself, against the embedded control plane through the
official client: Nodes by InternalIP, Warning Events about Nodes since a moment, the trusted CA
ConfigMap, and every place a proxy credential must not show up (by Node where the place is about
one), the install-config excepted."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from typing import Any

import pytest
from kubernetes import client, config

from proxyfleet.core.contract import OPERATOR_NAMESPACE, TRUSTED_CA
from proxyfleet.harness.conformance import checks, clusterobjects, credentialscan
from proxyfleet.harness.conformance.clusterobjects import node_name
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.apifront import api_front

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


async def test_a_credential_is_found_in_any_field_of_any_object(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    url = f"http://u:{SECRET}@proxy:3128"
    await _node(api, "win-0001", "10.1.0.5", {"proxyfleet.io/proxy": url})
    await _node(api, "win-0002", "10.1.0.6")
    await call(core.patch_node, "win-0002", {"metadata": {"labels": {"proxy-user": f"u.{SECRET}"}}})
    await _node(api, "win-0003", "10.1.0.7")
    now = dt.datetime.now(dt.UTC)
    await _event(api, "about-node", "Node", "win-0003", "Warning", f"proxy u:{SECRET} refused", now)
    # data, and metadata: an annotation of a ConfigMap is as readable as its data
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": "leaky"}, "data": {"proxy": f"u%3A{SECRET}"}})  # percent-encoded
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": "applied", "annotations": {"proxyfleet.io/applied": url}}, "data": {}})
    token = base64.b64encode(f"u:{SECRET}".encode()).decode()
    await call(core.create_namespaced_secret, OPERATOR_NAMESPACE,
               {"metadata": {"name": "auth"}, "data": {"header": base64.b64encode(f"Basic {token}".encode()).decode()}})
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,  # binaryData: decoded before it is looked at
               {"metadata": {"name": "blob"}, "binaryData": {"proxy.bin": base64.b64encode(url.encode()).decode()}})
    # kinds nobody listed before: a Lease's holder, a Namespace's label, a Pod's environment
    await call(client.CoordinationV1Api(api).create_namespaced_lease, OPERATOR_NAMESPACE,
               {"metadata": {"name": "leader"}, "spec": {"holderIdentity": url}})
    await call(core.create_namespace, {"metadata": {"name": "proxy-notes", "labels": {"note": f"u-{SECRET}"}}})
    await call(core.create_namespaced_pod, OPERATOR_NAMESPACE,
               {"metadata": {"name": "helper"}, "spec": {"containers": [{"name": "c", "image": "x",
                                                                       "env": [{"name": "HTTP_PROXY", "value": url}]}]}})
    # status, as a controller writes it: a condition's message
    await call(core.patch_namespaced_pod_status, "helper", OPERATOR_NAMESPACE,
               {"status": {"conditions": [{"type": "Ready", "status": "False", "message": f"proxy {url} refused"}]}})
    # the Proxy's own URLs are where the credential must be; anything else on it is not
    await call(custom.patch_cluster_custom_object, "config.openshift.io", "v1", "proxies", "cluster",
               {"metadata": {"annotations": {"last-applied": url}}, "spec": {"httpProxy": url, "httpsProxy": url}})
    # The installer keeps the install-config (and its proxy URL) where only admins read it.
    await call(core.patch_namespaced_config_map, "cluster-config-v1", "kube-system",
               {"data": {"install-config": f"proxy: {{httpProxy: '{url}'}}"}})
    nodes = await clusterobjects.node_objects(api)
    found = await clusterobjects.credential_leaks(api, nodes, {SECRET},
                                                  lambda: [("the reconciler's log", f"password {SECRET}")])
    assert found.unlisted == {} and found.resources >= 10
    assert found.found["10.1.0.5"] == ["Node win-0001 annotation proxyfleet.io/proxy"]
    assert found.found["10.1.0.6"] == ["Node win-0002 label proxy-user"]
    assert {p.split(" ", 2)[0] + " " + p.split(" ", 2)[2] for p in found.found["10.1.0.7"]} == {"Event message"}
    elsewhere = found.found[""]
    assert f"ConfigMap {OPERATOR_NAMESPACE}/leaky data.proxy" in elsewhere
    assert f"ConfigMap {OPERATOR_NAMESPACE}/applied annotation proxyfleet.io/applied" in elsewhere
    assert f"Secret {OPERATOR_NAMESPACE}/auth data.header" in elsewhere
    assert f"Lease {OPERATOR_NAMESPACE}/leader spec.holderIdentity" in elsewhere
    assert "Namespace proxy-notes label note" in elsewhere
    assert f"Pod {OPERATOR_NAMESPACE}/helper spec.containers.0.env.0.value" in elsewhere  # no OLM in the lab
    assert f"Pod {OPERATOR_NAMESPACE}/helper status.conditions.0.message" in elsewhere
    assert f"ConfigMap {OPERATOR_NAMESPACE}/blob binaryData.proxy.bin" in elsewhere
    assert "Proxy cluster annotation last-applied" in elsewhere
    assert "the reconciler's log" in elsewhere
    assert not [p for p in elsewhere if "cluster-config-v1" in p or "httpProxy" in p or "httpsProxy" in p], elsewhere
    assert not any(SECRET in p for places in found.found.values() for p in places)  # never echoed
    # On an existing cluster, OLM's injected proxy variables are the platform's copy, not a leak.
    on_cluster = await clusterobjects.credential_leaks(api, nodes, {SECRET}, list, existing_cluster=True)
    assert not [p for p in on_cluster.found[""] if "Pod" in p and ".env." in p]
    assert f"Pod {OPERATOR_NAMESPACE}/helper status.conditions.0.message" in on_cluster.found[""]  # not OLM's
    assert f"ConfigMap {OPERATOR_NAMESPACE}/applied annotation proxyfleet.io/applied" in on_cluster.found[""]


async def test_what_the_run_may_not_list_is_said_not_guessed(plane: ControlPlane) -> None:
    # a kubelet's identity: it may list Nodes, not Secrets or ConfigMaps
    restricted = config.new_client_from_config_dict(plane.kubeconfig(token=plane.kubelet_token("win-0009")))  # type: ignore[no-untyped-call]
    try:
        found = await clusterobjects.credential_leaks(restricted, {}, {SECRET}, list, existing_cluster=True)
    finally:
        restricted.close()
    assert "secrets" in found.unlisted and "configmaps" in found.unlisted
    assert found.unlisted["secrets"].startswith("403")
    assert "nodes" not in found.unlisted  # a kubelet may list Nodes: those were read
    verdict = checks.credentials([], found.unlisted)
    assert verdict.ok and "not readable by this run: " in verdict.observed and "secrets (403" in verdict.observed


async def test_a_group_the_server_would_not_describe_is_said(plane: ControlPlane) -> None:
    """An API group whose resources discovery would not give (an aggregated API that is down) is
    named among what the run could not read, not passed over in silence."""
    async with api_front(plane) as front:
        front.refuse("GET", "/apis/coordination.k8s.io/v1", 503)
        refused = await asyncio.to_thread(front.client, plane, plane.settings.state_dir / "front-kubeconfig")
        try:
            found = await clusterobjects.credential_leaks(refused, {}, {SECRET}, list)
        finally:
            refused.close()
    assert found.unlisted == {"coordination.k8s.io/v1 (discovery)": "503 Service Unavailable"}
    verdict = checks.credentials([], found.unlisted)
    assert "coordination.k8s.io/v1 (discovery) (503 Service Unavailable)" in verdict.observed


async def test_an_existing_clusters_platform_copies_are_named_as_left_out(api: client.ApiClient,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """On an existing cluster the Machine Config Operator's MachineConfigs carry every Linux node's
    proxy file: left out, and said so. (The lab serves no MachineConfigs: discovery is made to list
    them, and the lab's own run tries to read them — its 404 shows it did.)"""
    discovered = credentialscan.listable

    def with_machineconfigs(api: client.ApiClient, refused: dict[str, str] | None = None) -> list[Any]:
        return [*discovered(api, refused),
                credentialscan.Listable("machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig")]

    monkeypatch.setattr(credentialscan, "listable", with_machineconfigs)
    on_cluster = await clusterobjects.credential_leaks(api, {}, {SECRET}, list, existing_cluster=True)
    assert on_cluster.skipped == ["machineconfigs.machineconfiguration.openshift.io"] and not on_cluster.unlisted
    verdict = checks.credentials([], on_cluster.unlisted, on_cluster.skipped)
    assert verdict.ok and "not scanned (the platform's own copies of the proxy settings): machineconfigs." \
        "machineconfiguration.openshift.io" in verdict.observed
    in_lab = await clusterobjects.credential_leaks(api, {}, {SECRET}, list)
    assert not in_lab.skipped and in_lab.unlisted["machineconfigs.machineconfiguration.openshift.io"].startswith("404")


async def test_nothing_is_read_when_there_is_no_credential_to_look_for(api: client.ApiClient) -> None:
    def logs() -> list[tuple[str, str]]:
        raise AssertionError("the log was read with nothing to look for")

    scan = await clusterobjects.credential_leaks(api, {}, set(), logs)
    assert scan.found == {} and scan.objects == 0


async def test_a_step_walks_only_the_objects_that_changed(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    cache = credentialscan.ScanCache()
    first = await clusterobjects.credential_leaks(api, {}, {SECRET}, list, cache=cache)
    assert first.objects > 0 and first.found == {}
    again = await clusterobjects.credential_leaks(api, {}, {SECRET}, list, cache=cache)
    assert again.objects == 0  # nothing changed: nothing walked again
    await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
               {"metadata": {"name": "later", "annotations": {"note": f"u:{SECRET}"}}})
    later = await clusterobjects.credential_leaks(api, {}, {SECRET}, list, cache=cache)
    assert later.objects == 1 and later.found[""] == [f"ConfigMap {OPERATOR_NAMESPACE}/later annotation note"]
    still = await clusterobjects.credential_leaks(api, {}, {SECRET}, list, cache=cache)
    assert still.objects == 0 and still.found == later.found  # unchanged, still found
    other = await clusterobjects.credential_leaks(api, {}, {"another-secret"}, list, cache=cache)
    assert other.objects > 1 and other.found == {}  # other secrets: everything walked again
