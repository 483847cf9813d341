"""The timestamps proxies write, read as aware datetimes: offsets kept, a stamp without one in the
zone given, a year-less stamp in the year that keeps it from the future."""

import datetime as dt

import pytest

from proxyfleet.harness.lab import logtimes

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def test_epoch_seconds() -> None:
    assert logtimes.epoch("1795641477.467").isoformat() == "2026-11-25T21:17:57.467000+00:00"
    assert logtimes.epoch("1795641477").isoformat() == "2026-11-25T21:17:57+00:00"
    for text in ("-1", "1e9", "nan", ""):
        with pytest.raises(ValueError):
            logtimes.epoch(text)


def test_common_log_format_times_keep_their_offset() -> None:
    assert logtimes.clf("25/Nov/2026:21:17:27 +0000").isoformat() == "2026-11-25T21:17:27+00:00"
    assert logtimes.clf("25/Nov/2026:21:17:57 -0000").isoformat() == "2026-11-25T21:17:57+00:00"  # Traffic Server
    assert logtimes.clf("05/Jan/2026:08:00:00 -0530").isoformat() == "2026-01-05T08:00:00-05:30"
    for text in ("25/Nov/2026:21:17:27", "25/nov/2026:21:17:27 +0000", "25/Nov/2026 21:17:27 +0000"):
        with pytest.raises(ValueError):
            logtimes.clf(text)


def test_iso_times_without_an_offset_are_in_the_zone_given() -> None:
    assert logtimes.iso("2026-11-25T21:00:00+01:00").isoformat() == "2026-11-25T21:00:00+01:00"
    assert logtimes.iso("2026-11-25T21:00:00", dt.UTC).isoformat() == "2026-11-25T21:00:00+00:00"
    assert logtimes.iso("2026-11-25T21:00:00").tzinfo is not None  # this machine's


def test_any_time_takes_each_kind() -> None:
    assert logtimes.any_time("1795641477").isoformat() == "2026-11-25T21:17:57+00:00"
    assert logtimes.any_time("25/Nov/2026:21:17:27 +0000").isoformat() == "2026-11-25T21:17:27+00:00"
    assert logtimes.any_time("2026-11-25 21:17:27Z").isoformat() == "2026-11-25T21:17:27+00:00"
    with pytest.raises(ValueError, match="not epoch seconds"):
        logtimes.any_time("yesterday")


def test_a_yearless_stamp_is_never_more_than_a_day_ahead_of_the_reading() -> None:
    assert logtimes.yearless("Nov 25 21:16:15.537", NOW, dt.UTC).isoformat() == "2026-11-25T21:16:15.537000+00:00"
    new_year = dt.datetime(2027, 1, 1, 0, 5, tzinfo=dt.UTC)
    assert logtimes.yearless("Dec 31 23:59:59.000", new_year, dt.UTC).year == 2026
    assert logtimes.yearless("Jan 01 00:04:00.000", new_year, dt.UTC).year == 2027
    # a clock a little ahead of the reader's, on New Year's Eve
    assert logtimes.yearless("Jan 01 00:00:01.000", dt.datetime(2026, 12, 31, 23, 59, tzinfo=dt.UTC), dt.UTC).year \
        == 2027
    assert logtimes.yearless("Feb 29 10:00:00.000", NOW, dt.UTC).year == 2024
    for text in ("Nov 25 21:16:15", "Foo 25 21:16:15.537", "Nov 25 2026 21:16:15.537"):
        with pytest.raises(ValueError):
            logtimes.yearless(text, NOW, dt.UTC)
