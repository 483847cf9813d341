"""Server-side printing: ``meta.k8s.io/v1 Table`` objects, so ``kubectl get`` shows the columns a
real cluster shows (Nodes' STATUS and ROLES, ClusterOperators' AVAILABLE/DEGRADED, ...)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

Cell = Callable[[dict[str, Any]], Any]


def human_age(timestamp: str | None, now: dt.datetime | None = None) -> str:
    """kubectl's HumanDuration: 45s, 5m, 3h, 2d."""
    if not timestamp:
        return "<unknown>"
    try:  # RFC 3339 as clients send it: "Z" or an offset, with or without fractions
        moment = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    seconds = int(((now or dt.datetime.now(dt.UTC)) - moment).total_seconds())
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _age(obj: dict[str, Any]) -> str:
    return human_age(obj.get("metadata", {}).get("creationTimestamp"))


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in obj.get("status", {}).get("conditions", []) or []:
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def _node_status(obj: dict[str, Any]) -> str:
    ready = _condition(obj, "Ready").get("status")
    text = {"True": "Ready", "False": "NotReady"}.get(str(ready), "NotReady" if ready else "Unknown")
    if obj.get("spec", {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(obj: dict[str, Any]) -> str:
    labels = obj.get("metadata", {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    return ",".join(roles) or "<none>"


def _node_address(obj: dict[str, Any], kind: str) -> str:
    for address in obj.get("status", {}).get("addresses", []) or []:
        if address.get("type") == kind:
            return str(address.get("address"))
    return "<none>"


def _info(obj: dict[str, Any], key: str) -> str:
    return str(obj.get("status", {}).get("nodeInfo", {}).get(key, "<unknown>"))


def _co_since(obj: dict[str, Any]) -> str:
    times = [c.get("lastTransitionTime") for c in obj.get("status", {}).get("conditions", []) or []]
    latest = max((t for t in times if t), default=None)
    return human_age(latest)


def _co_version(obj: dict[str, Any]) -> str:
    for version in obj.get("status", {}).get("versions", []) or []:
        if version.get("name") == "operator":
            return str(version.get("version", ""))
    return ""


def _event_time(obj: dict[str, Any]) -> str | None:
    if obj.get("lastTimestamp"):
        return str(obj["lastTimestamp"])
    event_time = obj.get("eventTime")
    return f"{str(event_time)[:19]}Z" if event_time else None


def _event_object(obj: dict[str, Any]) -> str:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


Column = tuple[str, str, int, Cell]  # name, type, priority, cell

COLUMNS: dict[str, list[Column]] = {
    "namespaces": [("Status", "string", 0, lambda o: o.get("status", {}).get("phase", "Active"))],
    "configmaps": [("Data", "integer", 0,
                    lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))],
    "secrets": [("Type", "string", 0, lambda o: o.get("type", "Opaque")),
                ("Data", "integer", 0, lambda o: len(o.get("data") or {}))],
    "nodes": [("Status", "string", 0, _node_status), ("Roles", "string", 0, _node_roles),
              ("Age", "string", 0, _age),
              ("Version", "string", 0, lambda o: _info(o, "kubeletVersion")),
              ("Internal-IP", "string", 1, lambda o: _node_address(o, "InternalIP")),
              ("OS-Image", "string", 1, lambda o: _info(o, "osImage")),
              ("Kernel-Version", "string", 1, lambda o: _info(o, "kernelVersion")),
              ("Container-Runtime", "string", 1, lambda o: _info(o, "containerRuntimeVersion"))],
    "events": [("Last Seen", "string", 0, lambda o: human_age(_event_time(o))),
               ("Type", "string", 0, lambda o: o.get("type", "")),
               ("Reason", "string", 0, lambda o: o.get("reason", "")),
               ("Object", "string", 0, _event_object),
               ("Message", "string", 0, lambda o: o.get("message", o.get("note", "")))],
    "leases": [("Holder", "string", 0, lambda o: o.get("spec", {}).get("holderIdentity", ""))],
    "clusteroperators": [
        ("Version", "string", 0, _co_version),
        ("Available", "string", 0, lambda o: _condition(o, "Available").get("status", "")),
        ("Progressing", "string", 0, lambda o: _condition(o, "Progressing").get("status", "")),
        ("Degraded", "string", 0, lambda o: _condition(o, "Degraded").get("status", "")),
        ("Since", "string", 0, _co_since),
        ("Message", "string", 0, lambda o: _condition(o, "Degraded").get("message", ""))],
}
_AGE_AT_END = {"namespaces", "configmaps", "secrets", "leases", "proxies", "networks",
               "infrastructures"}


def columns_for(plural: str) -> list[Column]:
    columns: list[Column] = [("Name", "string", 0, lambda o: o.get("metadata", {}).get("name", ""))]
    columns += COLUMNS.get(plural, [])
    if plural in _AGE_AT_END or plural not in COLUMNS:
        columns.append(("Age", "string", 0, _age))
    return columns


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def to_table(plural: str, items: list[dict[str, Any]], resource_version: str,
             include_object: str = "Metadata", continue_token: str = "") -> dict[str, Any]:
    columns = columns_for(plural)
    definitions = [{"name": name, "type": kind, "format": "name" if name == "Name" else "",
                    "description": name, "priority": priority}
                   for name, kind, priority, _ in columns]
    rows = []
    for item in items:
        row: dict[str, Any] = {"cells": [cell(item) for _, _, _, cell in columns]}
        if include_object == "Object":
            row["object"] = item
        elif include_object != "None":
            row["object"] = partial_metadata(item)
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": definitions, "rows": rows}
