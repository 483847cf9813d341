"""A node's boots, whatever its kind: numbered, each with its own id, never two at one instant; and
whether a reboot's sessions lose their exit status, seeded and counted."""

from __future__ import annotations

import datetime as dt

import pytest

from proxyfleet.simulators.boots import BootRecord, ExitStatusLoss, OutageWatch


def test_boot_records_follow_one_another_even_when_the_clock_stands_still() -> None:
    now = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    boots: list[BootRecord] = []
    for _ in range(3):
        boots.append(BootRecord.after(boots, now))
    assert [b.number for b in boots] == [1, 2, 3]
    assert boots[0].booted_at < boots[1].booted_at < boots[2].booted_at
    assert len({b.boot_id for b in boots}) == 3 and all(len(b.boot_id) == 32 for b in boots)


def test_a_reboot_that_loses_exit_statuses_counts_each_and_one_that_does_not_keeps_them() -> None:
    loss = ExitStatusLoss(seed=0, name="worker-a")
    loss.decide(1.0)
    assert loss.lost and [loss.keeps(rebooting=True), loss.keeps(rebooting=True)] == [False, False]
    assert loss.keeps(rebooting=False) and loss.count == 2  # no reboot under way: nothing lost
    loss.decide(0.0)
    assert not loss.lost and loss.keeps(rebooting=True) and loss.count == 2


def test_the_decisions_repeat_for_the_same_seed_and_node() -> None:
    def decisions(seed: int, name: str) -> list[bool]:
        loss = ExitStatusLoss(seed, name)
        made = []
        for _ in range(40):
            loss.decide(0.5)
            made.append(loss.lost)
        return made

    assert decisions(7, "worker-a") == decisions(7, "worker-a")
    assert decisions(7, "worker-a") != decisions(7, "worker-b")


class _Node:
    name = "worker-a"


def test_an_outage_keeps_what_the_observers_saw_at_each_edge_and_tells_the_listeners() -> None:
    node = _Node()
    cordoned = [True]
    heard: list[object] = []
    watch = OutageWatch(node, outage_observer=lambda n: cordoned[0], pods_observer=lambda n: ("web-1",),
                        down_listeners=[heard.append])
    asked = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    outage = watch.went_down(asked + dt.timedelta(seconds=1), requested_at=asked)
    assert (outage.at_down, outage.pods_at_down, outage.requested_at, outage.up_at) == (True, ("web-1",), asked, None)
    assert heard == [node]
    cordoned[0] = False
    watch.came_up(asked + dt.timedelta(seconds=5))
    watch.came_up(asked + dt.timedelta(seconds=9))  # nothing open: nothing changes
    assert (outage.up_at, outage.at_up) == (asked + dt.timedelta(seconds=5), False)


def test_an_observer_that_fails_is_logged_and_never_breaks_the_reboot(caplog: pytest.LogCaptureFixture) -> None:
    def broken(node: object) -> bool:
        raise RuntimeError("the API server is gone")

    watch = OutageWatch(_Node(), outage_observer=broken)
    outage = watch.went_down(dt.datetime(2026, 11, 27, tzinfo=dt.UTC))
    assert outage.at_down is None and outage.pods_at_down is None
    assert "an outage observer of worker-a failed" in caplog.text
