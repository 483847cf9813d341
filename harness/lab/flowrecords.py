"""The lab's flow records as built from a proxy's log: one transaction, in the shape the lab
proxy's ``FlowLog`` writes.

Keys: ``time`` (ISO 8601 with its offset, or None when the log has none), ``kind`` (``connect``
for a CONNECT, ``request`` for a request the proxy read itself: ``intercepted`` is then true),
``client``, ``client_port`` (logs do not say: None), ``connect_target`` (``host:port`` of a
CONNECT, or of an ``https://`` request the proxy decrypted), ``scheme``, ``method``, ``host``
(lower case, no brackets), ``port``, ``path``, ``status`` (None when the log does not say),
``error``, and ``format``: which parser read it. A user name or password in the log never reaches
a record: a URL's userinfo is dropped, user-name fields are not read.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlsplit


class LogLineError(ValueError):
    """A line that is not in the format being read: skipped by readers, never guessed at."""


def authority(text: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) as a lower-case host without brackets, and the port."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or "/" in host or "@" in host or not 0 < int(port) < 65536:
        raise LogLineError(f"CONNECT target {text[:120]!r} is not host:port")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise LogLineError(f"CONNECT target {text[:120]!r}: an IPv6 address must be in brackets")
    return host.strip("[]").lower(), int(port)


def flow_record(log_format: str, *, time: dt.datetime | None, client: str, method: str | None, target: str,
                status: int | None, error: str | None = None) -> dict[str, Any]:
    """A record of one transaction whose request named ``target``: ``host:port`` (a CONNECT; with
    no method logged, that is what such a target is), else an absolute URL (a request the proxy
    read itself). Raises ``LogLineError`` for anything else, such as an origin-form ``/path``
    (a request to the proxy itself, not through it)."""
    record: dict[str, Any] = {"time": time.isoformat() if time is not None else None, "client": client,
                              "client_port": None, "method": method, "status": status, "error": error,
                              "format": log_format}
    if method == "CONNECT" or (method is None and "://" not in target):
        host, port = authority(target)
        record.update(kind="connect", connect_target=f"{host}:{port}", scheme=None, host=host, port=port,
                      path=None, intercepted=False)
        return record
    try:
        parts = urlsplit(target)
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:  # a bad port or bracket
        raise LogLineError(f"request URL {target[:120]!r} is not a URL") from None
    if not parts.scheme or not parts.hostname:
        raise LogLineError(f"request URL {target[:120]!r} is not absolute")
    host = parts.hostname.lower()
    record.update(kind="request", connect_target=f"{host}:{port}" if parts.scheme.lower() == "https" else None,
                  scheme=parts.scheme.lower(), host=host, port=port,
                  path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                  # The proxy read the request itself: in plain HTTP, or inside a TLS it bumped.
                  intercepted=True)
    return record
