"""Which /24 of the lab's address ranges a lab takes when it must listen on fixed ports.

Origins that a vendor's proxy reaches by name listen on 443 and 80 of their own addresses, so two
labs on one machine — several scenario workers of one run, or two runs — must not share
addresses. Each such lab claims a lab index with an advisory lock (``flock``) on a file named for
it; the kernel releases the lock when the process ends, however it ends, so a crash never leaves
an index taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import IO

LOCK_PREFIX = "proxyfleet-lab-index-"
MAX_INDEX = 255


class NoFreeLabIndex(RuntimeError):
    """Every lab index is held by a running lab."""


def claim_lab_index(directory: Path | None = None, first: int = 1, last: int = MAX_INDEX) -> tuple[int, IO[bytes]]:
    """The first free lab index from ``first`` to ``last`` and the open lock file that holds it
    (close it, or end the process, to give the index back)."""
    where = directory or Path(tempfile.gettempdir())
    for index in range(first, last + 1):
        path = where / f"{LOCK_PREFIX}{index}.lock"
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        handle = os.fdopen(descriptor, "r+b")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        except BaseException:
            handle.close()
            raise
        return index, handle
    which = f"lab address block {first}" if first == last else f"all lab address blocks from {first} to {last}"
    raise NoFreeLabIndex(f"{which} in use by running labs (lock files {where}/{LOCK_PREFIX}*.lock)")


def release(handle: IO[bytes]) -> None:
    """Give a claimed index back."""
    with contextlib.suppress(OSError):
        fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()
