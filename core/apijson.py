"""The Kubernetes API's answers as the server's own JSON, not the official client's models.

The client turns every object into a model and back (``sanitize_for_serialization``) when asked
for dicts, and a watch builds a model of every event even when only its raw object is read. At
1,000 Nodes that was most of a list's cost and of every heartbeat's watch event: callers here only
ever read plain JSON, so they get it directly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes import watch


def raw_json(call: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """An API call's answer as the server's JSON (blocking: run it in a thread from async code)."""
    found: dict[str, Any] = json.loads(call(*args, _preload_content=False, **kwargs).data)
    return found


class RawWatch(watch.Watch):
    """A watch whose events carry the server's JSON as both ``object`` and ``raw_object``."""

    def get_return_type(self, func: Callable[..., Any]) -> None:
        return None  # no model: ``unmarshal_event`` then hands over the parsed JSON as it is
