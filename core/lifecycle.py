"""Process lifecycle: SIGTERM (what CI systems and container runtimes send) treated exactly
like Ctrl-C, child processes that die with their parent, and process groups ended politely
(SIGTERM, then SIGKILL after a grace period).

asyncio is not imported here at module level: ``core/forklaunch``, a stand-in process that must
start in milliseconds, uses ``die_with_parent`` (asyncio's import alone is 50 ms)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
from types import FrameType
from typing import Protocol

PR_SET_PDEATHSIG = 1


def _runners_ctrl_c(handler: object) -> bool:
    """Whether ``handler`` is the Ctrl-C handler an ``asyncio.Runner`` installs while it runs."""
    method = handler.func if isinstance(handler, functools.partial) else None
    runner = getattr(sys.modules.get("asyncio"), "Runner", None)  # no asyncio imported: no Runner runs
    return (runner is not None and getattr(method, "__name__", "") == "_on_sigint"
            and isinstance(getattr(method, "__self__", None), runner))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    ctrl_c = signal.getsignal(signal.SIGINT)
    if callable(ctrl_c) and _runners_ctrl_c(ctrl_c):
        # What Ctrl-C does right now: under ``asyncio.Runner``, cancel the main task (and raise
        # KeyboardInterrupt once it has ended). A KeyboardInterrupt raised here instead lands in
        # whichever task happens to run — at 1,000 nodes the lab's own controllers — and is raised
        # again when that task is stopped, cutting the teardown short.
        ctrl_c(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def interrupt_on_sigterm() -> None:
    """Make SIGTERM do what Ctrl-C does (a KeyboardInterrupt in the main thread, or asyncio's
    cancellation of the main task while an ``asyncio.Runner`` runs; a KeyboardInterrupt where Ctrl-C
    is ignored), so every ``finally`` and fixture teardown that cleans up after Ctrl-C (proxies,
    labs, scratch directories) runs for it too."""
    signal.signal(signal.SIGTERM, _interrupt)


def die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent exits (``PR_SET_PDEATHSIG``), so a
    killed controller leaves no worker or proxy behind. A no-op elsewhere. Safe in ``preexec_fn``."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent was already gone before we asked
        os.kill(os.getpid(), signal.SIGTERM)


class ChildProcess(Protocol):
    """A process this one can wait for: an ``asyncio.subprocess.Process``, or one a fork server
    started on its behalf."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


async def terminate_group(process: ChildProcess, grace: float | None) -> None:
    """End ``process`` (started with ``start_new_session``) and everything in its process group:
    SIGTERM, then SIGKILL if it is still there after ``grace`` seconds (at once when None)."""
    import asyncio  # running here means it is imported already (see the module's docstring)

    if process.returncode is not None:
        return
    if grace is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def exit_description(returncode: int) -> str:
    """How a child ended, as a shell says it: ``exit status 1`` or ``killed by SIGTERM`` (asyncio and
    subprocess report a signal as a negative return code)."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (another user's counts: signalling it is refused)."""
    if pid <= 0:
        return False  # 0 and negatives name process groups, not a process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
