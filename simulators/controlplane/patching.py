"""The three patch formats of the Kubernetes API: JSON merge patch (RFC 7386), strategic merge
patch (served as a merge patch: none of the served types has merge keys that differ), and JSON
patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

from simulators.controlplane.errors import APIError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'invalid JSON pointer "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(document: Any, parts: list[str]) -> tuple[Any, str]:
    node = document
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise APIError(422, "Invalid", f"jsonpatch: path /{'/'.join(parts)} does not exist")
    return node, parts[-1]


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    document = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise bad_request(f"the JSON patch operation {operation!r} is missing 'op' or 'path'")
        op, parts = operation["op"], _pointer(operation["path"])
        if op in ("add", "replace", "test") and "value" not in operation:
            raise bad_request(f"the JSON patch operation {op} at {operation['path']} has no value")
        if op == "move" or op == "copy":
            source_parent, source_key = _parent(document, _pointer(operation["from"]))
            value = (source_parent[int(source_key)] if isinstance(source_parent, list)
                     else source_parent[source_key])
            if op == "move":
                del source_parent[int(source_key) if isinstance(source_parent, list) else source_key]
            operation = {"op": "add", "path": operation["path"], "value": copy.deepcopy(value)}
            op = "add"
        if not parts:
            if op in ("add", "replace"):
                document = copy.deepcopy(operation["value"])
                continue
            raise bad_request(f"the JSON patch operation {op} cannot target the whole document")
        parent, key = _parent(document, parts)
        if isinstance(parent, list):
            index = len(parent) if key == "-" else int(key) if key.isdigit() else -1
            if index < 0 or index > len(parent) or (op != "add" and index >= len(parent)):
                raise APIError(422, "Invalid", f"jsonpatch: index {key} out of range")
            if op == "add":
                parent.insert(index, copy.deepcopy(operation["value"]))
            elif op == "replace":
                parent[index] = copy.deepcopy(operation["value"])
            elif op == "remove":
                del parent[index]
            elif op == "test" and parent[index] != operation["value"]:
                raise APIError(422, "Invalid", f"jsonpatch: test failed at {operation['path']}")
            continue
        if not isinstance(parent, dict):
            raise APIError(422, "Invalid", f"jsonpatch: {operation['path']} is not inside an object")
        if op == "add":
            parent[key] = copy.deepcopy(operation["value"])
        elif op == "replace":
            if key not in parent:
                raise APIError(422, "Invalid", f"jsonpatch replace operation does not apply: doc is "
                                               f"missing key: {operation['path']}")
            parent[key] = copy.deepcopy(operation["value"])
        elif op == "remove":
            if key not in parent:
                raise APIError(422, "Invalid", f"jsonpatch remove operation does not apply: doc is "
                                               f"missing key: {operation['path']}")
            del parent[key]
        elif op == "test":
            if parent.get(key) != operation["value"]:
                raise APIError(422, "Invalid", f"jsonpatch: test failed at {operation['path']}")
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return document


def apply_patch(content_type: str, document: dict[str, Any], patch: Any) -> dict[str, Any]:
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise bad_request("the merge patch must be a JSON object")
        result = merge_patch(document, patch)
    elif kind == JSON_PATCH:
        result = json_patch(document, patch)
    elif kind == APPLY:
        raise APIError(415, "UnsupportedMediaType",
                       "server-side apply (application/apply-patch+yaml) is not supported by this "
                       "API server; use kubectl apply without --server-side")
    else:
        raise APIError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media types '
                       f'include: {JSON_PATCH}, {MERGE}, {STRATEGIC}')
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    return result
