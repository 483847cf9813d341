"""Running a lab component in the foreground until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def stop_requested() -> Iterator[asyncio.Event]:
    """An event set when the process receives SIGINT or SIGTERM, for as long as the block runs.
    Enter it before starting anything, so a signal during start-up is not met by the default
    action (which kills the process without cleaning up)."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    try:
        yield stopped
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def wait_for_stop_signal() -> None:
    """Return when the process receives SIGINT or SIGTERM."""
    with stop_requested() as stopped:
        await stopped.wait()
