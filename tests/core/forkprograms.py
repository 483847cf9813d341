"""Programs the fork server tests start by fork (``core/forkserver``, ``core/forklaunch``): each
takes its arguments as a list and shows on its streams what a test checks."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from proxyfleet.core.forkserver import ProcessExit


def echo(arguments: list[str]) -> int:
    """stdin upper-cased to stdout; its parent's pid, its session and name to stderr; exits with
    ``arguments[0]``."""
    sys.stdout.write(sys.stdin.read().upper())
    name = Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    sys.stderr.write(f"parent={os.getppid()} session-leader={os.getsid(0) == os.getpid()} name={name}\n")
    return int(arguments[0])


def held(arguments: list[str]) -> int:
    """Writes "ready" to the log ``arguments[1]``, a line there for each SIGTERM or SIGINT it gets,
    and exits 5 once the FIFO ``arguments[0]`` is written to."""
    fifo, log = arguments
    # One write(2) a line on an O_APPEND descriptor: a handler that another signal's handler
    # interrupts (CPython runs a handler at any bytecode, even inside another) cannot split a line.
    written = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def noted(signum: int, frame: FrameType | None) -> None:
        os.write(written, f"{signal.Signals(signum).name}\n".encode())

    signal.signal(signal.SIGTERM, noted)
    signal.signal(signal.SIGINT, noted)
    os.write(written, b"ready\n")
    with open(fifo) as released:  # blocks until the test writes: no polling
        released.read()
    return 5


def exits(arguments: list[str]) -> int:
    """Registers an ``atexit`` handler that says so on stdout, then ends with status 4: returning
    (the process ends at once) or raising ``ProcessExit`` (the interpreter's shutdown)."""
    atexit.register(lambda: print("atexit ran", flush=True))
    if arguments == ["process"]:
        raise ProcessExit(4)
    return 4


def killed(arguments: list[str]) -> int:
    """Ends itself with the signal ``arguments[0]``."""
    os.kill(os.getpid(), signal.Signals[arguments[0]])
    return 0
