"""A proxy's own access log, in whichever format it writes, read as the lab's flow records — for
enrichment only: reports show what a proxy logged beside verdicts the lab's own evidence decides.

Formats (``--proxy-log-format``): ``squid`` (Squid's native layout, ``squidlog``),
``trafficserver`` (Traffic Server's ``squid`` format, ``squidlog``), ``combined`` (the common and
combined formats of Apache httpd, nginx and Traffic Server, ``combinedlog``), ``tinyproxy`` (its own
log, ``tinyproxylog``), a regular expression with named groups (``customlog``), or ``auto``: each
line read by the first of squid, trafficserver, combined and tinyproxy that reads it (a plain
request's line is the same in Squid's and Traffic Server's, and read as Squid's). Lines no format
reads are skipped and counted, never guessed at. Reading here is pure, over lines; files are read
only through ``proxylogs.read_log`` (no links followed, the last ``LOG_LIMIT`` bytes).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.lab.combinedlog import parse_combined
from proxyfleet.harness.lab.customlog import CustomFormat, LogFormatError
from proxyfleet.harness.lab.flowrecords import LogLineError
from proxyfleet.harness.lab.proxylogs import read_log, visible
from proxyfleet.harness.lab.squidlog import parse_native, parse_trafficserver
from proxyfleet.harness.lab.tinyproxylog import TinyproxyReader

AUTO = "auto"
NAMED = ("squid", "trafficserver", "combined", "tinyproxy")  # in the order ``auto`` tries them
SHOWN_ENTRIES = 3  # distinct transactions ``describe_flows`` names before "and N more"
SHOWN_PATH = 60  # characters of a path ``describe_flows`` shows

__all__ = ["AUTO", "NAMED", "AccessLog", "LogFormatError", "check_format", "describe_flows", "read_file",
           "read_lines"]


class _Reader(Protocol):
    def feed(self, line: str) -> list[dict[str, Any]] | None: ...

    def finish(self) -> list[dict[str, Any]]: ...


@dataclass
class _OneLine:
    """A format whose every record is one line."""

    parse: Callable[[str], dict[str, Any]]

    def feed(self, line: str) -> list[dict[str, Any]] | None:
        try:
            return [self.parse(line)]
        except LogLineError:
            return None

    def finish(self) -> list[dict[str, Any]]:
        return []


@dataclass
class AccessLog:
    """What was read: the records in log order, and how many non-blank lines no format read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


def check_format(text: str) -> str:
    """``text`` when it is a format ``read_lines`` takes; raises ``LogFormatError`` (one line)
    saying why not. Anything but ``auto`` and the named formats is a regular expression."""
    if text != AUTO and text not in NAMED:
        try:
            CustomFormat.from_text(text)
        except LogFormatError as exc:
            raise LogFormatError(f"{exc} (or one of {', '.join((AUTO, *NAMED))})") from None
    return text


def _readers(log_format: str, now: dt.datetime | None, zone: dt.tzinfo | None) -> list[_Reader]:
    made: dict[str, Callable[[], _Reader]] = {
        "squid": lambda: _OneLine(parse_native), "trafficserver": lambda: _OneLine(parse_trafficserver),
        "combined": lambda: _OneLine(parse_combined), "tinyproxy": lambda: TinyproxyReader(now, zone)}
    if log_format == AUTO:
        return [made[name]() for name in NAMED]
    if log_format in made:
        return [made[log_format]()]
    return [_OneLine(CustomFormat.from_text(check_format(log_format), zone).parse)]


def read_lines(lines: Iterable[str], log_format: str = AUTO, now: dt.datetime | None = None,
               zone: dt.tzinfo | None = None) -> AccessLog:
    """Every record in ``lines``. ``now`` and ``zone``: when the log is read and the time zone of
    stamps that carry none (tinyproxy's; None: now, and this machine's). Raises
    ``LogFormatError`` for a format that is not one."""
    readers = _readers(log_format, now, zone)
    log = AccessLog()
    for line in lines:
        if not line.strip():
            continue
        for reader in readers:
            records = reader.feed(line)
            if records is not None:
                log.records.extend(records)
                break
        else:
            log.skipped += 1
    for reader in readers:
        log.records.extend(reader.finish())
    return log


def read_file(path: Path | None, log_format: str = AUTO, config_dir: Path | None = None) -> AccessLog:
    """A log file's records (none when there is no file, or it cannot be read safely: a link, a
    FIFO, a directory — see ``proxylogs.read_log``; its last ``LOG_LIMIT`` bytes only)."""
    if path is None:
        return AccessLog()
    try:
        data = read_log(config_dir, path)
    except OSError:
        return AccessLog()
    return read_lines(data.decode(errors="replace").splitlines(), log_format)


def describe_flows(records: Iterable[Mapping[str, Any]]) -> str:
    """One short line of what a proxy logged, for a report beside a verdict on one destination
    (give the records of that host): ``the proxy logged CONNECT quay.io:443 → 200 (TCP_TUNNEL)``.
    Alike transactions are counted (``…, 3 times``), at most ``SHOWN_ENTRIES`` named; a query string is
    left out (it may carry a token), control characters are escaped, URL credentials redacted."""
    entries = Counter(_entry(record) for record in records)
    if not entries:
        return "the proxy logged nothing for it"
    shown = [f"{entry}, {count} times" if count > 1 else entry
             for entry, count in list(entries.items())[:SHOWN_ENTRIES]]
    if len(entries) > SHOWN_ENTRIES:
        shown.append(f"and {len(entries) - SHOWN_ENTRIES} more")
    return visible(redact_text("the proxy logged " + "; ".join(shown)))


def _entry(record: Mapping[str, Any]) -> str:
    host, port, scheme = str(record.get("host")), record.get("port"), record.get("scheme")
    shown_host = f"[{host}]" if ":" in host else host
    if record.get("kind") == "connect":
        return f"CONNECT {shown_host}:{port} → {_outcome(record)}"
    default = {"http": 80, "https": 443}.get(str(scheme))
    where = shown_host + (f":{port}" if port is not None and port != default else "")
    path = str(record.get("path") or "/").split("?", 1)
    shown_path = path[0] if len(path[0]) <= SHOWN_PATH else path[0][:SHOWN_PATH] + "…"
    url = f"{scheme}://{where}{shown_path}" if scheme else f"{where}{shown_path}"
    return f"{record.get('method') or 'a request'} {url}{'?…' if len(path) > 1 else ''} → {_outcome(record)}"


def _outcome(record: Mapping[str, Any]) -> str:
    status, why = record.get("status"), record.get("squid_code") or record.get("error")
    if status is not None:
        return f"{status} ({why})" if why else str(status)
    if why:
        return f"{why} (no status logged)"
    if "origin_connected" in record:  # tinyproxy's: whether it logged its connection to the origin
        return "connected to the origin" if record["origin_connected"] else "no connection to the origin logged"
    return "no outcome logged"
