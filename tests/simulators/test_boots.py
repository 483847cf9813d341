"""A node's boots, whatever its kind: numbered, each with its own id, never two at one instant."""

from __future__ import annotations

import datetime as dt

from proxyfleet.simulators.boots import BootRecord


def test_boot_records_follow_one_another_even_when_the_clock_stands_still() -> None:
    now = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    boots: list[BootRecord] = []
    for _ in range(3):
        boots.append(BootRecord.after(boots, now))
    assert [b.number for b in boots] == [1, 2, 3]
    assert boots[0].booted_at < boots[1].booted_at < boots[2].booted_at
    assert len({b.boot_id for b in boots}) == 3 and all(len(b.boot_id) == 32 for b in boots)
