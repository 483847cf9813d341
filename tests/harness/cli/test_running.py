"""A foreground component stops on SIGINT or SIGTERM, and leaves no signal handler behind."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from proxyfleet.harness.cli.running import stop_requested, wait_for_stop_signal


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_either_signal_stops_the_wait(signum: int) -> None:
    loop = asyncio.get_running_loop()
    waiting = loop.create_task(wait_for_stop_signal())
    # Callbacks run in order: the task's first step (installing its handlers) comes before this.
    loop.call_soon(os.kill, os.getpid(), signum)
    await asyncio.wait_for(waiting, 10)
    assert not loop.remove_signal_handler(signum)  # removed again


async def test_a_signal_before_the_wait_is_not_lost() -> None:
    loop = asyncio.get_running_loop()
    with stop_requested() as stopped:
        os.kill(os.getpid(), signal.SIGTERM)  # during "start-up", before anything waits
        await asyncio.wait_for(stopped.wait(), 10)
    assert not loop.remove_signal_handler(signal.SIGTERM)
