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
