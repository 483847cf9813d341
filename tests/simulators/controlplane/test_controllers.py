"""The cluster's proxy controller through the running API: status follows a valid spec, an invalid
one degrades the network ClusterOperator and keeps the old status, and the trusted CA bundle is
merged, injected and rotated."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import trustme
from kubernetes import client

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.support import wait_until

VALID = "http://proxy.corp:3128"


def t(function: Any, *args: Any, **kwargs: Any) -> Any:
    return asyncio.to_thread(function, *args, **kwargs)


PROXY = ("config.openshift.io", "v1", "proxies", "cluster")


async def degraded(api: client.ApiClient) -> dict[str, Any]:
    operator = await t(client.CustomObjectsApi(api).get_cluster_custom_object,
                       "config.openshift.io", "v1", "clusteroperators", "network")
    return next(c for c in operator["status"]["conditions"] if c["type"] == "Degraded")


async def test_status_follows_a_valid_spec(api: client.ApiClient, control_plane: ControlPlane) -> None:
    custom = client.CustomObjectsApi(api)
    await t(custom.patch_cluster_custom_object, *PROXY,
            {"spec": {"httpProxy": VALID, "httpsProxy": VALID, "noProxy": ".corp"}})

    async def status() -> dict[str, Any]:
        return (await t(custom.get_cluster_custom_object, *PROXY)).get("status", {})

    async def applied() -> bool:
        return (await status()).get("noProxy", "").startswith(".cluster.local,.corp,")

    await wait_until(applied, what="status.noProxy")
    assert (await status())["httpsProxy"] == VALID
    assert (await degraded(api))["status"] == "False"
    writes = control_plane.store.writes
    await t(custom.patch_cluster_custom_object, *PROXY, {"metadata": {"labels": {"touch": "1"}}})
    await wait_until(lambda: control_plane.proxy_controller.reconciles > 0, what="a reconcile")
    assert control_plane.store.writes == writes + 1  # the status did not change, so it was not written


async def test_invalid_spec_degrades_and_keeps_the_old_status(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    await t(custom.patch_cluster_custom_object, *PROXY, {"spec": {"httpProxy": VALID}})
    await wait_until(lambda: _has_status(api), what="a status")
    await t(custom.patch_cluster_custom_object, *PROXY, {"spec": {"httpProxy": "https://wrong:3128"}})

    async def is_degraded() -> bool:
        return (await degraded(api))["status"] == "True"

    await wait_until(is_degraded, what="Degraded")
    condition = await degraded(api)
    assert condition["reason"] == "InvalidProxyConfig"
    assert "httpProxy requires a 'http' URI scheme" in condition["message"]
    assert (await t(custom.get_cluster_custom_object, *PROXY))["status"]["httpProxy"] == VALID


async def _has_status(api: client.ApiClient) -> bool:
    proxy = await t(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
    return bool(proxy.get("status", {}).get("httpProxy"))


async def test_trusted_ca_merge_injection_and_rotation(api: client.ApiClient, control_plane: ControlPlane) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    first, second = trustme.CA(), trustme.CA()
    await t(core.create_namespaced_config_map, "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="existing", labels={"config.openshift.io/inject-trusted-cabundle": "true"})))
    await t(core.create_namespaced_config_map, "openshift-config", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="corp-ca"), data={"ca-bundle.crt": first.cert_pem.bytes().decode()}))
    await t(custom.patch_cluster_custom_object, *PROXY,
            {"spec": {"httpsProxy": VALID, "trustedCA": {"name": "corp-ca"}}})

    async def bundle(namespace: str, name: str) -> str:
        configmap = await t(core.read_namespaced_config_map, name, namespace)
        return (configmap.data or {}).get("ca-bundle.crt", "")

    first_pem = first.cert_pem.bytes().decode().strip()
    await wait_until(lambda: _contains(bundle("openshift-config-managed", "trusted-ca-bundle"), first_pem),
                     what="the merged bundle")
    assert control_plane.settings.system_bundle_pem.strip() in await bundle("openshift-config-managed",
                                                                            "trusted-ca-bundle")
    await wait_until(lambda: _contains(bundle("default", "existing"), first_pem), what="injection")
    await t(core.create_namespaced_config_map, "kube-system", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="late", labels={"config.openshift.io/inject-trusted-cabundle": "true"})))
    await wait_until(lambda: _contains(bundle("kube-system", "late"), first_pem), what="injection into a new one")
    await t(core.patch_namespaced_config_map, "corp-ca", "openshift-config",
            {"data": {"ca-bundle.crt": second.cert_pem.bytes().decode()}})
    second_pem = second.cert_pem.bytes().decode().strip()
    await wait_until(lambda: _contains(bundle("default", "existing"), second_pem), what="rotation")
    assert first_pem not in await bundle("kube-system", "late")


async def _contains(text: Any, needle: str) -> bool:
    return needle in await text


def test_a_lease_renewed_late_while_the_lab_was_starved_is_not_a_silent_kubelet() -> None:
    from proxyfleet.simulators.controlplane.controllers import stale_nodes

    now = dt.datetime(2026, 11, 25, 12, 0, 10, tzinfo=dt.UTC)
    node = {"metadata": {"name": "win-0001"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    lease = {"spec": {"renewTime": "2026-11-25T12:00:04.000000Z"}}  # six seconds ago
    leases = {"win-0001": lease}
    assert stale_nodes([node], leases, now, grace=4.0) == ["win-0001"]
    # the lab's own loop could not run for three of those seconds: the kubelet could not renew
    assert stale_nodes([node], leases, now, grace=4.0, stalled=lambda ago: 3.0) == []
    # a second of stall does not excuse six seconds of silence
    assert stale_nodes([node], leases, now, grace=4.0, stalled=lambda ago: 1.0) == ["win-0001"]


def test_a_status_the_kubelet_posted_is_a_heartbeat_as_a_renewed_lease_is() -> None:
    """The real controller (tryUpdateNodeHealth) hears a kubelet by either a renewed Lease or a
    moved Ready lastHeartbeatTime: a node whose kubelet just posted its status is not silent however
    old its lease (at 1,000 nodes on a starved lab, counting the lease alone marked Nodes Unknown
    again right after their kubelets had posted Ready, pass after pass)."""
    from proxyfleet.simulators.controlplane.controllers import last_heard, stale_nodes

    now = dt.datetime(2026, 11, 25, 12, 0, 10, tzinfo=dt.UTC)
    leases = {"win-0001": {"spec": {"renewTime": "2026-11-25T12:00:00.000000Z"}}}  # ten seconds ago
    posted = {"metadata": {"name": "win-0001", "creationTimestamp": "2026-11-25T11:00:00Z"},
              "status": {"conditions": [{"type": "Ready", "status": "True",
                                         "lastHeartbeatTime": "2026-11-25T12:00:08Z"}]}}
    assert last_heard(posted, leases["win-0001"]) == dt.datetime(2026, 11, 25, 12, 0, 8, tzinfo=dt.UTC)
    assert stale_nodes([posted], leases, now, grace=4.0) == []
    old = {**posted, "status": {"conditions": [{"type": "Ready", "status": "True",
                                                "lastHeartbeatTime": "2026-11-25T11:59:00Z"}]}}
    assert stale_nodes([old], leases, now, grace=4.0) == ["win-0001"]
    # never heard from at all: counted from the Node's creation
    silent = {"metadata": {"name": "win-0002", "creationTimestamp": "2026-11-25T12:00:01Z"}, "status": {}}
    assert stale_nodes([silent], {}, now, grace=4.0) == ["win-0002"]
    assert stale_nodes([silent], {}, now, grace=20.0) == []


def test_the_controllers_own_unknown_is_not_a_heartbeat_and_a_kubelets_post_is() -> None:
    """Marking a Node Unknown keeps its Ready lastHeartbeatTime (only the kubelet moves it), so the
    mark is not heard as the kubelet; the kubelet's next post of Ready is, and is not undone by the
    next pass while its lease is still old."""
    from proxyfleet.simulators.controlplane.controllers import NodeLifecycleController
    from proxyfleet.simulators.controlplane.resources import LEASES, NODES
    from proxyfleet.simulators.controlplane.store import Store

    moment = [dt.datetime(2026, 11, 25, 12, 0, 0, tzinfo=dt.UTC)]
    store = Store(clock=lambda: moment[0])
    store.create(NODES, {"metadata": {"name": "win-0001"}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
         "lastHeartbeatTime": "2026-11-25T12:00:00Z", "lastTransitionTime": "2026-11-25T12:00:00Z"}]}})
    store.create(LEASES, {"metadata": {"name": "win-0001", "namespace": "kube-node-lease"},
                          "spec": {"renewTime": "2026-11-25T12:00:00.000000Z"}})
    controller = NodeLifecycleController(store, grace=40.0, clock=lambda: moment[0], stalled=lambda ago: 0.0)

    def ready() -> dict[str, Any]:
        node = store.get(NODES, "", "win-0001")
        return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")

    moment[0] += dt.timedelta(seconds=30)
    assert controller.check() == []
    moment[0] += dt.timedelta(seconds=15)  # 45 s of silence
    assert controller.check() == ["win-0001"]
    assert ready()["status"] == "Unknown" and ready()["reason"] == "NodeStatusUnknown"
    assert ready()["lastHeartbeatTime"] == "2026-11-25T12:00:00Z"  # the controller's write is no heartbeat
    assert ready()["lastTransitionTime"] == "2026-11-25T12:00:45Z"
    # the kubelet posts Ready (its lease renewal still late): heard, so not marked again
    node = store.get(NODES, "", "win-0001")
    node["status"]["conditions"] = [{**ready(), "status": "True", "reason": "KubeletReady",
                                     "lastHeartbeatTime": "2026-11-25T12:00:46Z"}]
    store.update(NODES, "", "win-0001", node, subresource="status")
    moment[0] += dt.timedelta(seconds=5)
    assert controller.check() == []
    assert ready()["status"] == "True"
    moment[0] += dt.timedelta(seconds=40)  # silent again past the grace
    assert controller.check() == ["win-0001"]


def test_kubernetes_timestamps_parse_and_nothing_else_does() -> None:
    from proxyfleet.simulators.controlplane.controllers import parse_time

    utc = dt.UTC
    assert parse_time("2026-11-25T12:00:01Z") == dt.datetime(2026, 11, 25, 12, 0, 1, tzinfo=utc)
    assert parse_time("2026-11-25T12:00:01.000250Z") == dt.datetime(2026, 11, 25, 12, 0, 1, 250, tzinfo=utc)
    assert parse_time("2026-11-25T12:00:01.5Z") == dt.datetime(2026, 11, 25, 12, 0, 1, 500000, tzinfo=utc)
    for not_one in (None, "", "2026-11-25", "2026-11-25T12:00:01", "2026-11-25T12:00:01+01:00",
                    "2026-13-25T12:00:01Z", "2026-11-25 12:00:01Z"):
        assert parse_time(not_one) is None, not_one
