"""Plain HTTPS requests to the embedded API server, for what the official client will not send."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from proxyfleet.simulators.controlplane.cluster import ControlPlane


async def raw(plane: ControlPlane, method: str, path: str, body: bytes | None = None,
              content_type: str = "application/json", token: str | None = "admin",
              headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A plain HTTPS request (in a thread, so the server on this loop can answer)."""
    return await asyncio.to_thread(_raw, plane, method, path, body, content_type, token, headers)


def _raw(plane: ControlPlane, method: str, path: str, body: bytes | None,
         content_type: str, token: str | None,
         headers: dict[str, str] | None) -> tuple[int, dict[str, Any], dict[str, str]]:
    context = ssl.create_default_context(cadata=plane.ca_pem.decode())
    request = urllib.request.Request(plane.url + path, data=body, method=method)
    if token is not None:
        request.add_header("Authorization", f"Bearer {plane.admin_token if token == 'admin' else token}")
    request.add_header("Content-Type", content_type)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), dict(error.headers)
