"""Server-side printing for ``kubectl get``: ages from any RFC 3339 timestamp a client wrote."""

from __future__ import annotations

import datetime as dt

import pytest

from proxyfleet.simulators.controlplane.tables import human_age

NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("stamp", "age"), [
    ("2026-11-23T11:59:15Z", "45s"),
    ("2026-11-23T11:59:15+00:00", "45s"),  # what the Python client sends for an aware datetime
    ("2026-11-23T11:59:15.123456Z", "44s"),
    ("2026-11-23T12:59:15+01:00", "45s"),
    ("2026-11-23T11:55:00Z", "5m"),
    ("2026-11-23T13:00:00Z", "0s"),  # a clock ahead of the server's
    (None, "<unknown>"),
    ("yesterday", "<invalid>"),
])
def test_ages(stamp: str | None, age: str) -> None:
    assert human_age(stamp, NOW) == age
