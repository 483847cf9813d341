"""The three patch formats of the Kubernetes API: JSON merge patch (RFC 7386), strategic merge
patch (served as a merge patch: none of the served types has merge keys that differ), and JSON
patch (RFC 6902)."""

from __future__ import annotations

from typing import Any

from proxyfleet.simulators.controlplane.errors import APIError, bad_request
from proxyfleet.simulators.controlplane.jsoncopy import copy_json

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unprocessable(message: str) -> APIError:
    # kube-apiserver: a patch that decodes but does not apply is a 422 (jsonPatcher.applyJSPatch)
    return APIError(422, "Invalid", message)


def _pointer(path: Any, field: str, op: str) -> list[str]:
    """RFC 6901: "" is the whole document, otherwise "/"-separated tokens with ~1 and ~0."""
    if not isinstance(path, str):
        raise _unprocessable(f"{op} operation does not apply: {field} is not a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f'{op} operation does not apply: invalid JSON pointer "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, op: str, for_insert: bool) -> int:
    if for_insert and token == "-":
        return len(container)
    if not token.isascii() or not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise _unprocessable(f"{op} operation does not apply: invalid array index {token!r} in {path}")
    index = int(token)
    limit = len(container) if for_insert else len(container) - 1
    if index > limit:
        raise _unprocessable(f"{op} operation does not apply: index {token} out of range in {path}")
    return index


def _container(document: Any, parts: list[str], path: str, op: str) -> Any:
    """The object or array that holds the last token of ``parts``."""
    node = document
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list):
            node = node[_index(node, part, path, op, for_insert=False)]
        else:
            raise _unprocessable(f"{op} operation does not apply: doc is missing path: {path}")
    if not isinstance(node, dict | list):
        raise _unprocessable(f"{op} operation does not apply: {path} is not inside an object or array")
    return node


def _get(document: Any, parts: list[str], path: str, op: str) -> Any:
    if not parts:
        return document
    node = _container(document, parts, path, op)
    if isinstance(node, list):
        return node[_index(node, parts[-1], path, op, for_insert=False)]
    if parts[-1] not in node:
        raise _unprocessable(f"{op} operation does not apply: doc is missing path: {path}")
    return node[parts[-1]]


def _remove(document: Any, parts: list[str], path: str, op: str) -> None:
    if not parts:
        raise _unprocessable(f"{op} operation does not apply: cannot remove the whole document")
    node = _container(document, parts, path, op)
    if isinstance(node, list):
        del node[_index(node, parts[-1], path, op, for_insert=False)]
    elif parts[-1] in node:
        del node[parts[-1]]
    else:
        raise _unprocessable(f"{op} operation does not apply: doc is missing key: {path}")


def _add(document: Any, parts: list[str], value: Any, path: str, op: str) -> Any:
    """Add (or, in an object, set) ``value``; returns the document (replaced when ``parts`` is empty)."""
    if not parts:
        return value
    node = _container(document, parts, path, op)
    if isinstance(node, list):
        node.insert(_index(node, parts[-1], path, op, for_insert=True), value)
    else:
        node[parts[-1]] = value
    return document


def json_patch(document: Any, operations: Any) -> Any:
    """RFC 6902. A patch that is not an array of objects is a 400 (it does not decode); an
    operation that cannot apply is a 422, as kube-apiserver answers."""
    if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    document = copy_json(document)
    for operation in operations:
        op = operation.get("op")
        if op not in ("add", "remove", "replace", "move", "copy", "test"):
            raise _unprocessable(f"Unexpected kind: {op if isinstance(op, str) else ''}")
        if "path" not in operation:
            raise _unprocessable(f"{op} operation does not apply: doc is missing path")
        path = operation["path"]
        parts = _pointer(path, "path", op)
        if op in ("add", "replace", "test") and "value" not in operation:
            raise _unprocessable(f"{op} operation does not apply: missing value")
        if op in ("move", "copy"):
            if "from" not in operation:
                raise _unprocessable(f"{op} operation does not apply: missing from")
            source = _pointer(operation["from"], "from", op)
            if op == "move" and parts[:len(source)] == source and len(parts) > len(source):
                raise _unprocessable(f"move operation does not apply: {path} is inside {operation['from']}")
            value = copy_json(_get(document, source, operation["from"], op))
            if op == "move":
                _remove(document, source, operation["from"], op)
            document = _add(document, parts, value, path, op)
        elif op == "add":
            document = _add(document, parts, copy_json(operation["value"]), path, op)
        elif op == "remove":
            _remove(document, parts, path, op)
        elif op == "replace":
            _get(document, parts, path, op)  # must exist
            if parts:
                _remove(document, parts, path, op)
            document = _add(document, parts, copy_json(operation["value"]), path, op)
        elif _get(document, parts, path, op) != operation["value"]:  # test
            raise _unprocessable(f"testing value {path} failed: test failed")
    return document


def check_patch_type(content_type: str) -> None:
    """415 for a media type that is not one of the served patch formats."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == APPLY:
        raise APIError(415, "UnsupportedMediaType",
                       "server-side apply (application/apply-patch+yaml) is not supported by this "
                       "API server; use kubectl apply without --server-side")
    if kind not in (MERGE, STRATEGIC, JSON_PATCH):
        raise APIError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media types '
                       f'include: {JSON_PATCH}, {MERGE}, {STRATEGIC}')


def apply_patch(content_type: str, document: dict[str, Any], patch: Any) -> dict[str, Any]:
    check_patch_type(content_type)
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in (MERGE, STRATEGIC):
        if not isinstance(patch, dict):
            raise bad_request("the merge patch must be a JSON object")
        result = merge_patch(document, patch)
    else:
        result = json_patch(document, patch)
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    return result
