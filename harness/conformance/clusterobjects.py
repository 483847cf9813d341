"""What the judge reads from the API server itself, on the lab and on an existing cluster alike:
Nodes by address, Warning Events about Nodes, the trusted CA ConfigMap, and every place ordinary
users read where a proxy credential could show up."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import OPERATOR_NAMESPACE, TRUSTED_CA
from proxyfleet.core.informer import internal_ip
from proxyfleet.harness.conformance import checks
from proxyfleet.harness.lab import admin

# The install-config as the installer stores it: the Proxy's own input (it holds the proxy URL).
INSTALL_CONFIG = "kube-system/cluster-config-v1"


async def node_objects(api: client.ApiClient) -> dict[str, dict[str, Any]]:
    """Node objects by InternalIP."""
    found: dict[str, dict[str, Any]] = {}
    for node in await admin.nodes(api):
        address = internal_ip(node)
        if address is not None:
            found[address] = node
    return found


def node_name(nodes: dict[str, dict[str, Any]], address: str) -> str:
    """The name of the Node at ``address`` (the address itself when it has none yet)."""
    return str(((nodes.get(address) or {}).get("metadata") or {}).get("name", address))


async def warning_events(api: client.ApiClient, since: dt.datetime) -> dict[str, list[tuple[dt.datetime, str]]]:
    """Warning Events about Nodes written since ``since``: Node name -> (when, "reason: message")."""
    events = await asyncio.to_thread(client.CoreV1Api(api).list_event_for_all_namespaces)
    since = since.replace(microsecond=0)  # Event timestamps have whole seconds
    found: dict[str, list[tuple[dt.datetime, str]]] = {}
    for event in events.items:
        involved = event.involved_object
        when = event.last_timestamp or event.event_time or event.metadata.creation_timestamp
        if event.type == "Warning" and involved is not None and involved.kind == "Node" and when and when >= since:
            found.setdefault(str(involved.name), []).append((when, f"{event.reason}: {event.message}"))
    return found


async def trusted_ca_configmap(api: client.ApiClient) -> dict[str, Any] | None:
    """The operator namespace's trusted CA ConfigMap as plain data; None when there is none."""
    try:
        found = await asyncio.to_thread(client.CoreV1Api(api).read_namespaced_config_map,
                                        TRUSTED_CA, OPERATOR_NAMESPACE)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    configmap: dict[str, Any] = api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
    return configmap


async def credential_leaks(api: client.ApiClient, nodes: dict[str, dict[str, Any]], secrets: set[str],
                           logs: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """Where one of ``secrets`` (proxy credentials) shows up: by node address (its Node's
    annotations and labels, Events about it) and under "" (anything else ordinary users read:
    other Events, ConfigMaps and Secrets other than the install-config the Proxy came from, and
    the (where, text) pairs ``logs`` gives, such as an external reconciler's log, read only when
    there is a credential to look for)."""
    if not secrets:
        return {}
    forms = checks.credential_forms(secrets)
    found: dict[str, list[str]] = {}

    def look(where: str, text: str, address: str = "") -> None:
        if checks.reveals(text, secrets, forms):
            found.setdefault(address, []).append(where)

    by_name = {}
    for address, node in nodes.items():
        metadata = node.get("metadata") or {}
        by_name[metadata.get("name")] = address
        for kind in ("annotations", "labels"):
            for key, value in (metadata.get(kind) or {}).items():
                look(f"Node {metadata.get('name')} {kind[:-1]} {key}", f"{key}={value}", address)
    core = client.CoreV1Api(api)

    async def listed(function: Callable[[], Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = api.sanitize_for_serialization(  # type: ignore[no-untyped-call]
            (await asyncio.to_thread(function)).items)
        return items

    for event in await listed(core.list_event_for_all_namespaces):
        involved = event.get("involvedObject") or {}
        address = by_name.get(involved.get("name"), "") if involved.get("kind") == "Node" else ""
        look(f"Event {event['metadata'].get('namespace')}/{event.get('reason')}",
             "\n".join(str(event.get(k) or "") for k in ("reason", "message", "note", "action")), address)
    for configmap in await listed(core.list_config_map_for_all_namespaces):
        where = f"{configmap['metadata'].get('namespace')}/{configmap['metadata'].get('name')}"
        if where != INSTALL_CONFIG:  # the Proxy's own input, as on a real cluster
            values = [*(configmap.get("data") or {}).values(), *(configmap.get("binaryData") or {}).values()]
            look(f"ConfigMap {where}", "\n".join(str(v) for v in values))
    for secret in await listed(core.list_secret_for_all_namespaces):
        texts = [base64.b64decode(v).decode("utf-8", errors="ignore") for v in (secret.get("data") or {}).values()]
        look(f"Secret {secret['metadata'].get('namespace')}/{secret['metadata'].get('name')}", "\n".join(texts))
    for where, text in logs():
        look(where, text)
    return found
