"""Copies of API objects, which are plain JSON values: dicts, lists, strings, numbers, booleans, null.

The store keeps and hands out copies of every object (a caller never holds the stored one), so
copying is on every read and write of the control plane. ``copy.deepcopy`` pays for what JSON
never has — shared parts, cycles, other types — and was 4.6 times slower on a list of Nodes. A
value of any other type is a caller's bug and fails here, loudly, instead of being shared.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

T = TypeVar("T")

_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: T) -> T:
    """A deep copy of the JSON value ``value``; TypeError for anything that is not JSON."""
    return cast(T, _copy(value))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind in _SCALARS:
        return value
    raise TypeError(f"not a JSON value: {kind.__name__} ({value!r:.60})")
