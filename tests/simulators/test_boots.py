"""A node's boots, whatever its kind: numbered, each with its own id, never two at one instant; and
whether a reboot's sessions lose their exit status, seeded and counted."""

from __future__ import annotations

import datetime as dt

from proxyfleet.simulators.boots import BootRecord, ExitStatusLoss


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
