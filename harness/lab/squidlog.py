"""Squid's native access-log layout, as Squid and Apache Traffic Server write it, read as the lab's
flow records (``flowrecords``).

A line is ``time elapsed client code/status bytes method URL user hierarchy/peer type`` (Squid's
``logformat squid``; Traffic Server's ``squid`` format in its default ``logging.yaml``, written as
text with ``mode: ascii`` or turned into text by ``traffic_logcat``). Squid writes a line when a
transaction ends (a CONNECT tunnel's when it closes), Traffic Server when it begins. The user
name field is never read.

Where they differ: Squid writes a CONNECT's target as ``quay.io:443`` and a tunnel's code as
``TCP_TUNNEL``; Traffic Server writes ``quay.io:443/`` and ``TCP_MISS``, and its refusals as
``ERR_PROXY_DENIED/403``, ``ERR_CONNECT_FAIL/502``. A plain request's line is the same in both,
so where either may be read it is read as Squid's.
"""

from __future__ import annotations

from typing import Any

from proxyfleet.harness.lab import logtimes
from proxyfleet.harness.lab.flowrecords import LogLineError, flow_record

NATIVE_FIELDS = 10


class SquidLogError(LogLineError):
    """A line that is not in Squid's native layout."""


def parse_native(line: str) -> dict[str, Any]:
    """One Squid native access-log line as a flow record; raises ``SquidLogError`` on anything else."""
    return _parse(line, "squid")


def parse_trafficserver(line: str) -> dict[str, Any]:
    """One line of Traffic Server's ``squid`` format as a flow record; raises ``SquidLogError``."""
    return _parse(line, "trafficserver")


def _parse(line: str, log_format: str) -> dict[str, Any]:
    fields = line.split()
    if len(fields) < NATIVE_FIELDS:
        raise SquidLogError(f"{len(fields)} fields, Squid's native layout has {NATIVE_FIELDS}: {line[:120]!r}")
    stamp, _elapsed, client, code_status, _size, method, url = fields[:7]
    code, _, status_text = code_status.partition("/")
    try:
        when = logtimes.epoch(stamp)
        status = int(status_text)
    except ValueError:
        raise SquidLogError(f"not a native access-log line: {line[:120]!r}") from None
    if method == "CONNECT" and log_format == "trafficserver" and url.endswith("/"):
        url = url[:-1]  # its canonical URL of a CONNECT: "quay.io:443/"
    try:
        record = flow_record(log_format, time=when, client=client, method=method, target=url,
                             status=status or None, error=None if 0 < status < 400 else code)
    except LogLineError as exc:
        raise SquidLogError(str(exc)) from None
    record["squid_code"] = code
    return record
