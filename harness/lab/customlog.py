"""A user's own access-log format: a regular expression with named groups
(``--proxy-log-format REGEX``), each line it matches read as a flow record (``flowrecords``).

Groups: ``client`` (the address the request came from) and either ``target`` (an absolute URL,
or ``host:port`` as a CONNECT names it) or ``host``; optionally ``method``, ``status`` (a number;
``-`` for none), ``time`` (epoch seconds, a common-log-format time or ISO 8601 — without an
offset, this machine's local time), ``port`` and ``path`` (with ``host``). No other named group
is taken: the format never reads a user name. With ``host``, a line is a CONNECT when its method
is CONNECT, else a request; its scheme is not known (None). A line the expression does not match
in full, or whose values do not read, is skipped.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from proxyfleet.harness.lab import logtimes
from proxyfleet.harness.lab.flowrecords import LogLineError, flow_record

REQUIRED = ("client",)
TARGETS = ("target", "host")
OPTIONAL = ("method", "status", "time", "port", "path")


class LogFormatError(ValueError):
    """A log format that cannot be used, in one line saying why."""


@dataclass(frozen=True)
class CustomFormat:
    """A checked expression (make one with ``from_text``)."""

    pattern: re.Pattern[str]
    zone: dt.tzinfo | None = None  # of times without an offset (None: local)

    @classmethod
    def from_text(cls, text: str, zone: dt.tzinfo | None = None) -> CustomFormat:
        """Compile and check ``text``; raises ``LogFormatError`` naming what is wrong."""
        try:
            pattern = re.compile(text)
        except re.error as exc:
            raise LogFormatError(f"not a regular expression: {exc}") from None
        groups = set(pattern.groupindex)
        unknown = groups - {*REQUIRED, *TARGETS, *OPTIONAL}
        if unknown:
            raise LogFormatError(f"unknown group(s) {', '.join(sorted(unknown))}: the groups are "
                                 f"{', '.join((*REQUIRED, *TARGETS, *OPTIONAL))}")
        if "client" not in groups:
            raise LogFormatError("no (?P<client>…) group: the address the request came from")
        if len(groups & set(TARGETS)) != 1:
            raise LogFormatError("needs exactly one of (?P<target>…) (a URL or host:port) and (?P<host>…)")
        if ({"port", "path"} & groups) and "host" not in groups:
            raise LogFormatError("(?P<port>…) and (?P<path>…) go with (?P<host>…), not (?P<target>…)")
        return cls(pattern, zone)

    def parse(self, line: str) -> dict[str, Any]:
        """One line as a flow record; raises ``LogLineError`` when it does not match or read."""
        found = self.pattern.fullmatch(line.rstrip("\r\n"))
        if found is None:
            raise LogLineError(f"does not match the format: {line[:120]!r}")
        values = {name: value for name, value in found.groupdict().items() if value not in (None, "")}
        if "client" not in values:
            raise LogLineError(f"no client: {line[:120]!r}")
        try:
            when = logtimes.any_time(values["time"], self.zone) if "time" in values else None
            status = int(values["status"]) if values.get("status", "-") != "-" else None
            method = values.get("method")
            record = flow_record("custom", time=when, client=values["client"], method=method,
                                 target=values.get("target") or _target(values, method), status=status)
        except ValueError as exc:  # LogLineError included
            raise LogLineError(str(exc)) from None
        if "target" not in values and record["kind"] == "request":
            # A host, port and path: the scheme was not logged, nor maybe the port.
            record.update(scheme=None, connect_target=None, port=int(values["port"]) if "port" in values else None)
        return record


def _target(values: dict[str, str], method: str | None) -> str:
    """A ``host`` group's line as the target ``flow_record`` reads."""
    if "host" not in values:
        raise LogLineError("no target or host")
    host = values["host"].strip("[]")
    port = values.get("port")
    if port is not None and not port.isdigit():
        raise LogLineError(f"port {port[:20]!r} is not a number")
    shown = f"[{host}]" if ":" in host else host
    if method == "CONNECT":
        if port is None:
            raise LogLineError("a CONNECT without a port")
        return f"{shown}:{port}"
    # No scheme is logged: read as http://… by flow_record, then forgotten by ``parse``.
    return f"http://{shown}{':' + port if port else ''}{values.get('path') or '/'}"
