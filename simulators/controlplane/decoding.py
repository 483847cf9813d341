"""Request bodies decoded as kube-apiserver decodes them, with a ``Status`` for every failure.

- Only JSON is served (``application/json``; no ``Content-Type`` means JSON, as in the real
  server's negotiation). Anything else is a 415 that names what is accepted.
- Numbers follow Go's unstructured decoding: an integer must fit int64 and a float must be
  finite; ``NaN``/``Infinity`` are not JSON. Python would otherwise turn a 5,000-digit number
  into a ValueError deep inside the handler.
- Nesting is bounded (``MAX_DEPTH``): Go's decoder allows 10,000 levels, but Python's recursion
  (deepcopy, validation) gives out far earlier, and no Kubernetes object nests beyond a few
  dozen. A deeper body is a 400, never a crash.
"""

from __future__ import annotations

import json
import math
from typing import Any

from proxyfleet.simulators.controlplane.errors import APIError, bad_request

JSON = "application/json"
MAX_DEPTH = 100
_INT64 = (-(2**63), 2**63 - 1)


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def require_json(content_type: str | None) -> None:
    """415 unless the request body is JSON (an absent Content-Type counts as JSON)."""
    kind = media_type(content_type)
    if kind not in ("", JSON):
        raise APIError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media types '
                       f'include: {JSON}')


def _number_error(text: str, go_type: str) -> APIError:
    shown = text if len(text) <= 32 else text[:32] + "..."
    return bad_request(f"json: cannot unmarshal number {shown} into Go value of type {go_type}")


def _integer(text: str) -> int:
    digits = text.lstrip("-").lstrip("0")
    if len(digits) > 19:  # beyond int64 either way; int() of a huge string is slow or refused
        raise _number_error(text, "int64")
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise _number_error(text, "int64")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _number_error(text, "float64")
    return value


def _constant(name: str) -> Any:
    raise bad_request(f"invalid character '{name[0]}' looking for beginning of value")


def depth(document: Any) -> int:
    """How deeply ``document`` nests objects and arrays (iteratively: no recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def decode(raw: bytes) -> Any:
    """Parse a JSON body; every failure is a 400 ``Status``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_request(f"the body of the request could not be decoded as JSON: {exc}") from None
    try:
        document = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise bad_request(f"the body of the request could not be decoded as JSON: {exc}") from None
    except RecursionError:
        raise bad_request(f"the body of the request nests deeper than {MAX_DEPTH} levels") from None
    if depth(document) > MAX_DEPTH:
        raise bad_request(f"the body of the request nests deeper than {MAX_DEPTH} levels")
    return document
