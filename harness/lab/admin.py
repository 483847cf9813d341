"""What a cluster administrator does, through the ``kubernetes`` client only: add Windows
instances (BYOH), set or remove the cluster-wide proxy, publish a trusted CA bundle.

The same calls work against a real cluster; every call runs in a thread so a lab sharing the
event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.apijson import raw_json
from proxyfleet.core.contract import (
    BUNDLE_KEY,
    INJECT_LABEL,
    INSTANCES,
    KEY_FIELD,
    KEY_SECRET,
    LINUX_INSTANCES,
    OPENSHIFT_CONFIG,
    OPERATOR_NAMESPACE,
    PROXY,
    TRUSTED_CA,
)


async def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(function, *args, **kwargs)


async def _upsert_configmap(api: client.ApiClient, namespace: str, name: str, data: dict[str, str],
                            labels: dict[str, str] | None = None) -> None:
    core = client.CoreV1Api(api)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, namespace=namespace, labels=labels),
                              data=data)
    await _create_or_replace(core.create_namespaced_config_map, core.replace_namespaced_config_map,
                             name, namespace, body)


async def _create_or_replace(create: Any, replace: Any, name: str, namespace: str, body: Any) -> None:
    try:
        await _call(create, namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        await _call(replace, name, namespace, body)


async def set_ssh_key(api: client.ApiClient, private_key: bytes, namespace: str = OPERATOR_NAMESPACE) -> None:
    core = client.CoreV1Api(api)
    body = client.V1Secret(metadata=client.V1ObjectMeta(name=KEY_SECRET, namespace=namespace),
                           data={KEY_FIELD: base64.b64encode(private_key).decode()})
    await _create_or_replace(core.create_namespaced_secret, core.replace_namespaced_secret, KEY_SECRET, namespace, body)


async def set_instances(api: client.ApiClient, instances: Iterable[tuple[str, str]],
                        namespace: str = OPERATOR_NAMESPACE) -> None:
    """windows-instances: ``address: username=<user>`` for each instance."""
    await _upsert_configmap(api, namespace, INSTANCES,
                            {address: f"username={user}" for address, user in instances})


async def set_linux_instances(api: client.ApiClient, instances: Iterable[tuple[str, str]],
                              namespace: str = OPERATOR_NAMESPACE) -> None:
    """linux-instances: ``address: username=<user>`` for each Linux node the reconciler drives."""
    await _upsert_configmap(api, namespace, LINUX_INSTANCES,
                            {address: f"username={user}" for address, user in instances})


async def instances(api: client.ApiClient, namespace: str = OPERATOR_NAMESPACE) -> dict[str, str]:
    """windows-instances as address -> SSH user (empty when the ConfigMap does not exist)."""
    try:
        found = await _call(client.CoreV1Api(api).read_namespaced_config_map, INSTANCES, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise
    users = {}
    for address, value in (found.data or {}).items():
        fields = dict(part.split("=", 1) for part in str(value).split(";") if "=" in part)
        users[str(address)] = fields.get("username", "Administrator").strip()
    return users


async def put_secret(api: client.ApiClient, namespace: str, name: str, data: dict[str, str], key: str) -> str:
    """Create or replace an Opaque Secret, then read ``key`` back from the API server."""
    core = client.CoreV1Api(api)
    body = client.V1Secret(metadata=client.V1ObjectMeta(name=name, namespace=namespace), type="Opaque",
                           data={k: base64.b64encode(v.encode()).decode() for k, v in data.items()})
    await _create_or_replace(core.create_namespaced_secret, core.replace_namespaced_secret, name, namespace, body)
    stored = await _call(core.read_namespaced_secret, name, namespace)
    return base64.b64decode((stored.data or {})[key]).decode()


async def set_trusted_ca(api: client.ApiClient, bundle_pem: str, name: str = "corp-ca") -> None:
    await _upsert_configmap(api, OPENSHIFT_CONFIG, name, {BUNDLE_KEY: bundle_pem})


async def set_proxy(api: client.ApiClient, *, http_proxy: str = "", https_proxy: str = "",
                    no_proxy: str = "", trusted_ca: str | None = None,
                    readiness_endpoints: list[str] | None = None) -> None:
    """Replace Proxy/cluster's spec (empty values unset the proxy)."""
    custom = client.CustomObjectsApi(api)
    current = await _call(custom.get_cluster_custom_object, *PROXY)
    current["spec"] = {k: v for k, v in {"httpProxy": http_proxy, "httpsProxy": https_proxy,
                                         "noProxy": no_proxy}.items() if v}
    current["spec"]["trustedCA"] = {"name": trusted_ca or ""}
    if readiness_endpoints:
        current["spec"]["readinessEndpoints"] = readiness_endpoints
    await _call(custom.replace_cluster_custom_object, *PROXY, current)


async def proxy_status(api: client.ApiClient) -> dict[str, str]:
    proxy = await _call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
    return dict(proxy.get("status") or {})


async def nodes(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every Node, as the API server's JSON."""
    listed = await _call(raw_json, client.CoreV1Api(api).list_node)
    return list(listed.get("items") or [])


async def node(api: client.ApiClient, name: str) -> dict[str, Any] | None:
    """The Node ``name`` as the API server has it now, as plain JSON (None: there is none)."""
    try:
        found: dict[str, Any] = await _call(raw_json, client.CoreV1Api(api).read_node, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


async def cordon(api: client.ApiClient, node_name: str, cordoned: bool = True) -> None:
    """``kubectl cordon`` (or ``uncordon``) a Node."""
    await _call(client.CoreV1Api(api).patch_node, node_name, {"spec": {"unschedulable": cordoned}})


async def tamper_trusted_ca(api: client.ApiClient, namespace: str, delete: bool) -> None:
    """Delete the operator's ``trusted-ca`` ConfigMap (``delete``) or remove its injection label."""
    core = client.CoreV1Api(api)
    if delete:
        await _call(core.delete_namespaced_config_map, TRUSTED_CA, namespace)
        return
    try:
        await _call(core.patch_namespaced_config_map, TRUSTED_CA, namespace,
                    {"metadata": {"labels": {INJECT_LABEL: None}}})
    except ApiException as exc:
        if exc.status == 404:
            raise LookupError(f"ConfigMap {namespace}/{TRUSTED_CA} does not exist: there is no label to remove "
                              "(it was not restored after it was deleted)") from None
        raise
