"""Query parameters decoded the way kube-apiserver decodes them.

The real server turns ``?watch=…``, ``?allowWatchBookmarks=…`` and the other ``ListOptions``
fields into Go values with apimachinery's query-parameter conversions
(``k8s.io/apimachinery/pkg/runtime/conversion.go``), not with ``strconv.ParseBool``:

- a boolean is false when the parameter is absent, ``0`` or ``false`` in any letter case, and
  true for *every other* value, the empty string included — so the Python client's ``watch=True``
  (``str(True)``) is a watch, and so is ``watch=yes``;
- an integer is ``strconv.ParseInt(value, 10, 64)``: anything else is a 400 ``BadRequest``.

Only the first value of a repeated parameter counts, as in Go's ``url.Values`` handling there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from proxyfleet.simulators.controlplane.errors import APIError, bad_request

_FALSE = {"0", "false"}
# strconv.ParseInt base 10: an optional sign and ASCII digits, nothing else (no spaces, no "_").
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)


def flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter with apimachinery's rule (absent, ``0``, ``false``: false)."""
    value = query.get(name)
    if value is None:
        return False
    return value.lower() not in _FALSE


def integer(query: Mapping[str, str], name: str) -> int | None:
    """A 64-bit integer query parameter; None when absent; ``BadRequest`` when Go would not parse it."""
    value = query.get(name)
    if value is None:
        return None
    if not _DECIMAL.fullmatch(value):
        raise _parse_error(value, "invalid syntax")
    # Python refuses to convert very long digit strings (and would spend time on them): anything
    # beyond 19 significant digits is out of int64's range anyway.
    digits = value.lstrip("+-").lstrip("0")
    number = int(value) if len(digits) <= 19 else None
    if number is None or not _INT64[0] <= number <= _INT64[1]:
        raise _parse_error(value, "value out of range")
    return number


def _parse_error(value: str, problem: str) -> APIError:
    # Go's strconv error text; a long value is cut so the Status stays small.
    shown = value if len(value) <= 64 else value[:64] + "..."
    return bad_request(f'strconv.ParseInt: parsing "{shown}": {problem}')
