"""The loop's own lag: stalls counted inside a window (partly when they straddle it), the worst one,
and a real starved loop measured as such."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from proxyfleet.core.looplag import LagLog, LagMonitor, LagRecord, poll_until, process_monitor, sleep_running


def test_stalls_are_counted_for_the_part_inside_the_window() -> None:
    record = LagRecord()
    record.add(10.0, 0.005)  # jitter: not kept
    record.add(12.0, 1.0)  # the loop could not run from 11.0 to 12.0
    record.add(20.0, 3.0)  # from 17.0 to 20.0
    assert record.stalled(0.0) == pytest.approx(4.0)
    assert record.stalled(11.5) == pytest.approx(3.5)  # half of the first
    assert record.stalled(12.0) == pytest.approx(3.0)
    assert record.stalled(0.0, 18.0) == pytest.approx(2.0)  # the first, and a second of the other
    assert record.stalled(13.0, 16.0) == 0.0
    assert record.worst(0.0) == pytest.approx(3.0) and record.worst(0.0, 15.0) == pytest.approx(1.0)
    assert record.worst(20.0) == 0.0


async def test_a_loop_held_up_is_measured() -> None:
    monitor = LagMonitor(interval=0.01)
    monitor.start()
    try:
        await asyncio.sleep(0.05)  # a turn or two of its own first
        before = time.monotonic()
        time.sleep(0.3)  # noqa: ASYNC251 - nothing on the loop runs meanwhile: what a starved process looks like
        await asyncio.sleep(0.05)
        assert monitor.stalled(before) >= 0.25
        assert monitor.worst(before) >= 0.25
    finally:
        await monitor.stop()


async def test_one_monitor_serves_a_loop() -> None:
    first = process_monitor()
    assert process_monitor() is first
    await first.stop()


async def test_a_process_the_lab_cannot_ask_logs_its_stalls_for_it(tmp_path: Path) -> None:
    path = tmp_path / "lag.jsonl"
    assert LagLog.read(path) is None  # nothing measured, not "no lag"
    log = LagLog(path)
    monitor = LagMonitor(interval=0.01, log=log)
    monitor.start()
    try:
        await asyncio.sleep(0.05)
        before = time.monotonic()
        time.sleep(0.3)  # noqa: ASYNC251 - a starved loop
        await asyncio.sleep(0.05)
    finally:
        await monitor.stop()
        log.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with path.open("a") as torn:
        torn.write('{"at": 1')  # a reader may meet a line being written
    record = LagLog.read(path)
    assert record is not None and record.worst(before) >= 0.25 and record.stalled(before) >= 0.25


async def test_polling_stops_when_done_or_when_the_time_is_up() -> None:
    asked: list[float] = []

    async def third_time() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 3

    assert await poll_until(third_time, within=30.0, every=0.01) and len(asked) == 3

    async def never() -> bool:
        asked.append(time.monotonic())
        return False

    asked.clear()
    assert not await poll_until(never, within=0.1, every=0.02)
    assert asked[-1] - asked[0] >= 0.1  # asked once more when the time was up


async def test_time_the_loop_could_not_run_is_given_back_to_the_poll() -> None:
    """A wait whose own process was starved past its whole window keeps asking: that time was not
    the awaited party's."""
    asked = 0

    async def starved_first() -> bool:
        nonlocal asked
        asked += 1
        if asked == 1:
            time.sleep(0.4)  # noqa: ASYNC251 - the loop starved longer than the whole window
        return asked >= 3

    process_monitor()
    await asyncio.sleep(0.06)  # the monitor has had a turn
    assert await poll_until(starved_first, within=0.2, every=0.02)
    assert asked == 3


async def test_time_the_caller_excuses_is_given_back_to_the_poll() -> None:
    """Asks that waited their turn behind the lab's other work (``excused``) do not use up the window."""
    asked = 0

    async def fifth_time() -> bool:
        nonlocal asked
        asked += 1
        return asked >= 5

    excused = 0.0

    def queued() -> float:  # every ask waited a tenth of a second for its turn
        return excused

    async def counted() -> bool:
        nonlocal excused
        excused += 0.1
        return await fifth_time()

    assert await poll_until(counted, within=0.05, every=0.03, excused=queued) and asked == 5
    asked = 0
    assert not await poll_until(fifth_time, within=0.05, every=0.03)  # not excused: the window ends first


async def test_a_simulated_duration_is_time_the_loop_could_run() -> None:
    """A stall in the middle of a simulated 0.2 s is given back: it ends 0.2 s of running time
    later, not 0.2 s of wall time (a host's clock stands still while the lab cannot run it)."""
    process_monitor()
    await asyncio.sleep(0.06)  # the monitor has had a turn
    began = time.monotonic()
    asyncio.get_running_loop().call_later(0.05, time.sleep, 0.3)  # the loop starves for 0.3 s
    await sleep_running(0.2, began)
    assert time.monotonic() - began >= 0.2 + 0.25  # the stall, as measured, came on top
