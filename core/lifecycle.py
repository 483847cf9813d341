"""Process lifecycle: SIGTERM (what CI systems and container runtimes send) treated exactly
like Ctrl-C, and child processes that die with their parent."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from types import FrameType

PR_SET_PDEATHSIG = 1
def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread, so every ``finally`` and fixture
    teardown that cleans up after Ctrl-C (proxies, labs, scratch directories) runs for it too."""
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
