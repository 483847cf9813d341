"""Running a lab component in the foreground until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import signal


async def wait_for_stop_signal() -> None:
    """Return when the process receives SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    try:
        await stopped.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
