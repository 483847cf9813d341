"""The timestamps proxies write in their access logs, read as timezone-aware datetimes.

Month names are read from a fixed English table, never through ``strptime``'s ``%b``: that
follows the reader's locale, while the proxies write them in the C locale. Each function raises
``ValueError`` on text that is not its kind of timestamp.
"""

from __future__ import annotations

import datetime as dt
import re

MONTHS = {name: number for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
# Apache's, nginx's and Traffic Server's %t: 25/Nov/2026:21:17:27 +0000 (Traffic Server writes -0000).
_CLF = re.compile(r"(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})")
# tinyproxy's: Nov 25 21:16:15.537, local time, no year.
_YEARLESS = re.compile(r"([A-Z][a-z]{2}) (\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})")
# How far ahead of the reading a year-less stamp may be (clocks and time zones of one machine
# disagree by less) before it is taken for last year's.
_YEARLESS_SLACK = dt.timedelta(days=1)


def _month(name: str) -> int:
    if name not in MONTHS:
        raise ValueError(f"not a month: {name!r}")
    return MONTHS[name]


def epoch(text: str) -> dt.datetime:
    """Seconds since the epoch (``1795641477.467``, Squid's and Traffic Server's ``%ts.%tu``)."""
    if not re.fullmatch(r"\d+(?:\.\d+)?", text):
        raise ValueError(f"not epoch seconds: {text!r}")
    return dt.datetime.fromtimestamp(float(text), dt.UTC)


def clf(text: str) -> dt.datetime:
    """The common log format's ``day/Mon/year:hh:mm:ss ±zzzz``."""
    found = _CLF.fullmatch(text)
    if found is None:
        raise ValueError(f"not a common-log-format time: {text!r}")
    day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = found.groups()
    offset = dt.timedelta(hours=int(zone_hours), minutes=int(zone_minutes)) * (-1 if sign == "-" else 1)
    return dt.datetime(int(year), _month(month), int(day), int(hour), int(minute), int(second),
                       tzinfo=dt.timezone(offset))


def iso(text: str, zone: dt.tzinfo | None = None) -> dt.datetime:
    """ISO 8601; one without an offset is in ``zone`` (None: this machine's local time)."""
    when = dt.datetime.fromisoformat(text)
    return when if when.tzinfo is not None else _localise(when, zone)


def any_time(text: str, zone: dt.tzinfo | None = None) -> dt.datetime:
    """Epoch seconds, a common-log-format time or ISO 8601, whichever ``text`` is."""
    for reader in (epoch, clf):
        try:
            return reader(text)
        except ValueError:
            pass
    try:
        return iso(text, zone)
    except ValueError:
        raise ValueError(f"not epoch seconds, a common-log-format time or ISO 8601: {text!r}") from None


def yearless(text: str, now: dt.datetime, zone: dt.tzinfo | None = None) -> dt.datetime:
    """A ``Mon dd hh:mm:ss.mmm`` stamp in ``zone`` (None: local time), in the year that puts it
    at most a day after ``now`` (a log read on 1 January still holds December's lines)."""
    found = _YEARLESS.fullmatch(text)
    if found is None:
        raise ValueError(f"not a 'Mon dd hh:mm:ss.mmm' time: {text!r}")
    month, day, hour, minute, second, millis = found.groups()
    for year in range(now.year + 1, now.year - 8, -1):  # back far enough for a 29 February
        try:
            when = _localise(dt.datetime(year, _month(month), int(day), int(hour), int(minute), int(second),
                                         int(millis) * 1000), zone)
        except ValueError:
            continue
        if when <= now + _YEARLESS_SLACK:
            return when
    raise ValueError(f"no year puts {text!r} before {now.isoformat()}")


def _localise(when: dt.datetime, zone: dt.tzinfo | None) -> dt.datetime:
    # astimezone() of a naive datetime takes it as local time, with the offset of that date.
    return when.replace(tzinfo=zone) if zone is not None else when.astimezone()
