"""Ending asyncio work without eating the caller's own cancellation.

Ctrl-C reaches a run as one cancellation of its main task (``asyncio.Runner`` cancels it once,
and only a second Ctrl-C raises ``KeyboardInterrupt``), so a single swallowed ``CancelledError``
anywhere on the main task's path makes the run ignore Ctrl-C and SIGTERM until its step's
deadline — at 1,000 nodes, half an hour. Two idioms swallow it:

- ``task.cancel(); with suppress(CancelledError): await task`` also suppresses the cancellation
  of the task that is waiting, if it arrives while it waits;
- ``asyncio.wait_for`` on Python 3.11 returns the inner result instead of raising when the
  caller is cancelled just as the inner awaitable finishes (CPython gh-86296, fixed in 3.12). Use
  ``asyncio.timeout`` instead; ``wait_until`` here is the bounded wait for an event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable


async def stop_task(task: asyncio.Task[object] | None) -> None:
    """Cancel ``task`` and wait until it has ended. An error the task ended with (other than its
    cancellation) is raised; the caller's own cancellation is never swallowed."""
    if task is None:
        return
    await stop_tasks((task,))


async def stop_tasks(tasks: Iterable[asyncio.Task[object]]) -> None:
    """Cancel every task and wait until all have ended; the first error any ended with (other than
    its cancellation) is raised, the caller's own cancellation never swallowed. A KeyboardInterrupt
    or SystemExit a task ended with is not raised again: asyncio raised it out of the loop when it
    happened, and raising it again would only cut the teardown after Ctrl-C short."""
    pending = [task for task in tasks]
    for task in pending:
        task.cancel()
    if not pending:
        return
    # asyncio.wait neither raises the tasks' CancelledError nor cancels them again if the caller is
    # cancelled while it waits: that cancellation (the caller's own) propagates.
    await asyncio.wait(pending)
    for task in pending:
        if not task.cancelled() and isinstance(error := task.exception(), Exception):
            raise error


async def wait_until(event: asyncio.Event, within: float) -> bool:
    """Wait at most ``within`` seconds for ``event``; whether it was set. Unlike ``asyncio.wait_for``
    on 3.11, a cancellation that arrives as the event is set is raised, not lost."""
    if event.is_set():
        return True
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            await event.wait()
    return event.is_set()
