"""A node's egress log keeps its newest records and absolute positions, so a reader knows what it
has not read yet even after the oldest were dropped."""

from __future__ import annotations

import datetime as dt

from proxyfleet.simulators.egress.records import EgressLog, EgressRecord

T0 = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def record(n: int) -> EgressRecord:
    return EgressRecord(T0, "127.10.0.1", "curl", n, "GET", f"https://Quay.IO/v2/{n}", "direct")


def test_positions_stay_absolute_when_the_oldest_records_go() -> None:
    log = EgressLog(limit=3)
    assert (log.new_session(), log.new_session()) == (0, 1)
    for n in range(5):
        log.add(record(n))
    assert log.position == 5 and log.dropped == 2
    assert [r.session for r in log.records] == [2, 3, 4]
    assert [r.session for r in log.since(3)] == [3, 4]
    assert [r.session for r in log.since(0)] == [2, 3, 4]  # what was dropped is gone, the rest is there
    assert log.since(5) == []


def test_a_record_names_its_destination_host_and_route() -> None:
    direct = record(0)
    assert direct.host == "quay.io" and not direct.through_proxy
    proxied = EgressRecord(T0, "127.10.0.1", "containerd", 0, "HEAD", "https://quay.io/v2/", "connect",
                           proxy="proxy.corp.internal:3128")
    assert proxied.through_proxy
