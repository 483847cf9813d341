"""tinyproxy's own log (1.11: ``LogFile``, ``LogLevel Connect`` or ``Info``), read as the lab's flow
records (``flowrecords``).

tinyproxy writes no access log: its one log has a line per event, ``LEVEL  Mon dd hh:mm:ss.mmm
[pid]: message``, in local time without a year, and a connection is spread over several lines::

    CONNECT   Nov 25 21:16:37.449 [3144]: Connect (file descriptor 5): 127.0.0.1
    CONNECT   Nov 25 21:16:37.449 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1
    CONNECT   Nov 25 21:16:37.449 [3144]: Established connection to host "quay.io" using file descriptor 6.
    INFO      Nov 25 21:16:44.938 [3144]: Closed connection between local client (fd:5) and remote client (fd:6)

What it never writes is the status it answered, so ``status`` is always None: a record says only
what the log does. ``origin_connected`` is true once tinyproxy logged its connection to the origin
(``Established connection to host``); ``error`` names a refusal or failure it logged (a filtered
domain or URL, a CONNECT port not allowed, a name that did not resolve, an origin that refused).
At ``LogLevel Connect`` the INFO lines are left out: a refused CONNECT port is then not logged
at all (its record has neither), nor are closings. A request refused for its credentials is not
logged at any level. One record per request line, in the order of those lines, so the records
read from a growing log keep their positions.

Outcome lines name the origin, not the client: among requests in flight at once to the same
host, the oldest still waiting is taken. A ``Connect`` line reusing a descriptor, or a new
process id, ends what was open.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxyfleet.harness.lab import logtimes
from proxyfleet.harness.lab.flowrecords import LogLineError, flow_record

_LINE = re.compile(r"(?P<level>CRITICAL|ERROR|WARNING|NOTICE|INFO|DEBUG|CONNECT) +"
                   r"(?P<stamp>[A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2}\.\d{3}) \[(?P<pid>\d+)\]: (?P<message>.*)")
_CONNECT = re.compile(r"Connect \(file descriptor (\d+)\): (\S+)(?: at \[.*\])?")
_REQUEST = re.compile(r"Request \(file descriptor (\d+)\): (.*)")
_ESTABLISHED = re.compile(r'Established connection to host "(.*)" using file descriptor \d+\.')
_CLOSED = re.compile(r"Closed connection between local client \(fd:(\d+)\) and remote client \(fd:-?\d+\)")
# Outcomes that name the origin, not the client: each goes to the oldest request still waiting.
_FILTERED = re.compile(r'Proxying refused on filtered (domain|url) "(.*)"')
_PORT_REFUSED = re.compile(r"Refused CONNECT method on port (\d+)")
_UNRESOLVED = re.compile(r"opensock: Could not retrieve address info for (.*):(\d+): (.*)")
_UNREACHABLE = re.compile(r"opensock: Could not establish a connection to (.*):(\d+)")


@dataclass
class _Open:
    """A client connection tinyproxy logged, and the record of its request once logged."""

    client: str
    record: dict[str, Any] | None = None


class TinyproxyReader:
    """Feed it tinyproxy's log line by line. ``now``: when the log is read (tinyproxy writes no
    year; default: now); ``zone``: the time zone tinyproxy wrote in (None: this machine's, where
    the lab runs it)."""

    def __init__(self, now: dt.datetime | None = None, zone: dt.tzinfo | None = None) -> None:
        self.now = now if now is not None else dt.datetime.now(dt.UTC)
        self.zone = zone
        self._pid = ""
        self._open: dict[str, _Open] = {}  # by the client's file descriptor
        self._waiting: list[dict[str, Any]] = []  # requests with no outcome logged yet, oldest first

    def feed(self, line: str) -> list[dict[str, Any]] | None:
        """The records a line begins (a request line begins one; later lines complete it in
        place), or None when the line is not tinyproxy's."""
        found = _LINE.fullmatch(line.rstrip("\r\n"))
        if found is None:
            return None
        if found["pid"] != self._pid:  # another process: nothing of the last one's is still open
            self._pid, self._open, self._waiting = found["pid"], {}, []
        message = found["message"]
        if connect := _CONNECT.fullmatch(message):
            self._close(connect[1])
            self._open[connect[1]] = _Open(client=connect[2])
        elif request := _REQUEST.fullmatch(message):
            return self._request(request[1], request[2], found["stamp"])
        elif established := _ESTABLISHED.fullmatch(message):
            self._outcome(lambda r: r["host"] == established[1].lower(), origin_connected=True)
        elif closed := _CLOSED.fullmatch(message):
            self._close(closed[1])
        else:
            self._failure(message)
        return []

    def finish(self) -> list[dict[str, Any]]:
        """Nothing more: every record was returned when its request line was read."""
        return []

    def _request(self, descriptor: str, request_line: str, stamp: str) -> list[dict[str, Any]]:
        connection = self._open.get(descriptor)
        words = request_line.split(" ")
        if connection is None or connection.record is not None or len(words) != 3:
            return []  # the log began after this connection did (no client to name), or not a request
        try:
            record = flow_record("tinyproxy", time=logtimes.yearless(stamp, self.now, self.zone),
                                 client=connection.client, method=words[0], target=words[1], status=None)
        except ValueError:  # LogLineError included: e.g. a request for tinyproxy's own stathost
            return []
        record["origin_connected"] = False
        connection.record = record
        self._waiting.append(record)
        return [record]

    def _failure(self, message: str) -> None:
        if filtered := _FILTERED.fullmatch(message):
            kind, what = filtered.groups()
            self._outcome(lambda r: _filtered_matches(r, kind, what), error=f"refused: filtered {kind}")
        elif port := _PORT_REFUSED.fullmatch(message):
            self._outcome(lambda r: r["kind"] == "connect" and r["port"] == int(port[1]),
                          error=f"refused: CONNECT to port {port[1]} not allowed")
        elif unresolved := _UNRESOLVED.fullmatch(message):
            host, number, reason = unresolved.groups()
            self._outcome(lambda r: (r["host"], r["port"]) == (host.lower(), int(number)),
                          error=f"name lookup failed: {reason}")
        elif unreachable := _UNREACHABLE.fullmatch(message):
            host, number = unreachable.groups()
            self._outcome(lambda r: (r["host"], r["port"]) == (host.lower(), int(number)),
                          error="could not connect to the origin")

    def _outcome(self, matches: Callable[[dict[str, Any]], bool], **outcome: Any) -> None:
        for record in self._waiting:
            if matches(record):
                record.update(outcome)
                self._stop_waiting(record)
                return

    def _close(self, descriptor: str) -> None:
        connection = self._open.pop(descriptor, None)
        if connection is not None and connection.record is not None:
            self._stop_waiting(connection.record)

    def _stop_waiting(self, record: dict[str, Any]) -> None:
        # by identity: two requests alike in every field are still two
        self._waiting = [r for r in self._waiting if r is not record]


def _filtered_matches(record: dict[str, Any], kind: str, what: str) -> bool:
    if kind == "domain":
        return bool(record["host"] == what.lower())
    try:  # FilterURLs: the URL as requested (for a CONNECT, its host:port)
        filtered = flow_record("", time=None, client="", method=record["method"], target=what, status=None)
    except LogLineError:
        return False
    return bool(filtered["host"] == record["host"])
