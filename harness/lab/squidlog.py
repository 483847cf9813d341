"""Squid's native access log, read as the lab's flow records.

A native line is ``time elapsed client code/status bytes method URL user hierarchy/peer type``
(Squid's ``logformat squid``), written when a transaction ends — for a CONNECT tunnel, when the
tunnel closes. Records have the shape the lab proxy's ``FlowLog`` writes: ``kind`` is ``connect``
for a CONNECT (a tunnel, or the outer request of an ssl-bump), ``request`` for a request the proxy
read itself (plain HTTP, or HTTPS it decrypted: ``intercepted`` is then true); the user name is
dropped (flows never carry credentials).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from proxyfleet.harness.lab.proxylogs import read_log

NATIVE_FIELDS = 10


class SquidLogError(ValueError):
    """A line that is not in Squid's native format."""


def _authority(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise SquidLogError(f"CONNECT target {text!r} is not host:port")
    return host.strip("[]").lower(), int(port)


def parse_native(line: str) -> dict[str, Any]:
    """One native access-log line as a flow record; raises ``SquidLogError`` on anything else."""
    fields = line.split()
    if len(fields) < NATIVE_FIELDS:
        raise SquidLogError(f"{len(fields)} fields, Squid's native format has {NATIVE_FIELDS}: {line[:120]!r}")
    stamp, _elapsed, client, code_status, _size, method, url = fields[:7]
    code, _, status_text = code_status.partition("/")
    try:
        when = dt.datetime.fromtimestamp(float(stamp), dt.UTC)
        status = int(status_text)
    except ValueError:
        raise SquidLogError(f"not a native access-log line: {line[:120]!r}") from None
    record: dict[str, Any] = {"time": when.isoformat(), "client": client, "client_port": None,
                              "method": method, "status": status or None, "squid_code": code,
                              "error": None if 0 < status < 400 else code}
    if method == "CONNECT":
        host, port = _authority(url)
        record.update(kind="connect", connect_target=f"{host}:{port}", scheme=None, host=host, port=port,
                      path=None, intercepted=False)
        return record
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        raise SquidLogError(f"request URL {url!r} is not absolute")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    record.update(kind="request", connect_target=f"{parts.hostname}:{port}" if parts.scheme == "https" else None,
                  scheme=parts.scheme, host=parts.hostname.lower(), port=port,
                  path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                  # The proxy read the request itself: in plain HTTP, or inside a TLS it bumped.
                  intercepted=True)
    return record


def read_native_file(path: Path | None) -> list[dict[str, Any]]:
    """A native access log file's records (none when there is no file, or it cannot be read). Its
    directory is followed as named, the file itself only if it is a regular file and not a link (a
    proxy that puts a link or a FIFO there gets nothing read), and only its last ``LOG_LIMIT`` bytes."""
    if path is None:
        return []
    try:
        data = read_log(None, path)
    except OSError:
        return []
    return read_native(data.decode(errors="replace").splitlines())


def read_native(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Every record of a native access log; lines in another format are skipped (a log may
    begin before the vendor's ``logformat`` took effect), never guessed at."""
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            records.append(parse_native(line))
        except SquidLogError:
            continue
    return records
