"""What the judge reads from the API server itself, on the lab and on an existing cluster alike:
Nodes by address, Warning Events about Nodes, the trusted CA ConfigMap, and every object a proxy
credential could be written into."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import OPERATOR_NAMESPACE, TRUSTED_CA
from proxyfleet.core.informer import internal_ip
from proxyfleet.harness.conformance import checks, credentialscan
from proxyfleet.harness.lab import admin


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
                           logs: Callable[[], Iterable[tuple[str, str]]],
                           existing_cluster: bool = False,
                           cache: credentialscan.ScanCache | None = None) -> credentialscan.Scan:
    """Where one of ``secrets`` (proxy credentials) shows up: in any field of any object the API
    server lets the run list (``credentialscan``), filed by node address where the place is a Node
    or an Event about one and under "" otherwise, and in the (where, text) pairs ``logs`` gives
    (an external reconciler's log) — all read only when there is a credential to look for."""
    if not secrets:
        return credentialscan.Scan()
    by_name = {str((node.get("metadata") or {}).get("name")): address for address, node in nodes.items()}
    found = await credentialscan.scan_async(api, secrets, by_name, existing_cluster, cache)
    forms = checks.credential_forms(secrets)
    for where, text in logs():
        if checks.reveals(text, secrets, forms):
            found.found.setdefault("", []).append(where)
    return found
