"""The start-up wait: a program still working is given its time, an idle one is not."""

from __future__ import annotations

import subprocess
import sys
import time

from proxyfleet.core.startupclock import (
    CEILING_FACTOR,
    CEILING_FLOOR,
    IDLE_SECONDS,
    SAMPLE_SECONDS,
    StartupClock,
    tree_cpu_seconds,
)


class Fake:
    """A clock and a CPU counter the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.used: float | None = 0.0
        self.reads = 0

    def clock(self) -> float:
        return self.now

    def cpu(self, pid: int) -> float | None:
        self.reads += 1
        return self.used


def _clock(fake: Fake, limit: float = 30.0, pid: int | None = 1, stalled: float = 0.0) -> StartupClock:
    return StartupClock(limit, lambda: pid, lambda since: stalled, fake.clock, fake.cpu)


def test_within_the_limit_the_wait_goes_on_whatever_the_program_does() -> None:
    fake = Fake()
    clock = _clock(fake)
    fake.now += 29.9
    assert not clock.expired()


def test_past_the_limit_a_program_still_working_is_given_its_time_up_to_the_ceiling() -> None:
    fake = Fake()
    clock = _clock(fake)
    assert clock.ceiling == 30 * CEILING_FACTOR
    while fake.now < 100 + clock.ceiling - 1:
        fake.now += 1.0
        fake.used = (fake.used or 0) + 0.1  # it keeps working: a slow, busy machine
        assert not clock.expired()
    fake.now += 2.0
    fake.used = (fake.used or 0) + 0.1
    assert clock.expired()
    assert "its ceiling" in clock.why()


def test_a_waiter_asking_often_reads_the_cpu_once_a_second() -> None:
    fake = Fake()
    clock = _clock(fake)
    for _ in range(100):  # a waiter's looks every 50 ms for 5 s: a scan of /proc each would be 100
        fake.now += 0.05
        assert not clock.expired()
    assert fake.reads == int(5 / SAMPLE_SECONDS)


def test_a_short_limit_still_has_the_ceiling_floor() -> None:
    assert _clock(Fake(), limit=0.2).ceiling == CEILING_FLOOR


def test_past_the_limit_an_idle_program_has_failed() -> None:
    fake = Fake()
    clock = _clock(fake)
    fake.used = 2.0
    fake.now += 10
    assert not clock.expired()
    fake.now += 20 + IDLE_SECONDS - 0.1  # idle since 10 s in, but the limit has only just passed
    assert clock.expired()
    assert "none in the last" in clock.why() and "2.0 s of CPU" in clock.why()


def test_the_labs_own_stall_moves_the_limit() -> None:
    fake = Fake()
    clock = _clock(fake, stalled=20.0)
    fake.now += 45
    assert not clock.expired()  # 25 s of it were the lab's own


def test_without_a_process_to_watch_the_limit_is_wall_time() -> None:
    fake = Fake()
    clock = _clock(fake, pid=None)
    fake.now += 30.1
    assert clock.expired()
    assert clock.why() == "waited 30 s"


def test_a_process_trees_cpu_counts_its_children() -> None:
    assert tree_cpu_seconds(0) is None  # no such process
    burner = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, "
                               f"'-c', {burner!r}]); sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # the child's half second of CPU, on a busy machine
        used = tree_cpu_seconds(parent.pid)
        while used is not None and used < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)  # polling a condition with a deadline
            used = tree_cpu_seconds(parent.pid)
        assert used is not None and used >= 0.5
    finally:
        parent.communicate(b"")
