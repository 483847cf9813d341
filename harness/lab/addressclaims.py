"""Which /24 of the lab's address ranges a lab takes when it must listen on fixed ports.

Origins that a vendor's proxy reaches by name listen on 443 and 80 of their own addresses, so two
labs on one machine — several scenario workers of one run, or two runs — must not share
addresses. Each such lab claims a lab index with an advisory lock (``flock``) on a file named for
it; the kernel releases the lock when the process ends, however it ends, so a crash never leaves
an index taken. The lock files live in this user's private runtime directory
(``/run/proxyfleet`` as root): in a directory anyone can write, anyone could take an index
first, or put a link where a lock file goes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import IO

from proxyfleet.core.privatedirs import private_directory, runtime_directory

LOCK_PREFIX = "lab-index-"
MAX_INDEX = 255
_OPEN = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class NoFreeLabIndex(RuntimeError):
    """Every lab index is held by a running lab."""


def claim_lab_index(directory: Path | None = None, first: int = 1, last: int = MAX_INDEX) -> tuple[int, IO[bytes]]:
    """The first free lab index from ``first`` to ``last`` and the open lock file that holds it
    (close it, or end the process, to give the index back). ``directory`` (default: the runtime
    directory) must be ours alone: ``NotPrivateError`` otherwise."""
    where = private_directory(directory) if directory is not None else runtime_directory()
    for index in range(first, last + 1):
        path = where / f"{LOCK_PREFIX}{index}.lock"
        handle = os.fdopen(_open_lock(path), "r+b")
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


def _open_lock(path: Path) -> int:
    """The lock file, 0600, never through a link, only a regular file."""
    try:
        descriptor = os.open(path, _OPEN, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, f"{path} is a symbolic link, not a lock file of ours") from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, f"{path} is not a regular file, not a lock file of ours")
    return descriptor


def release(handle: IO[bytes]) -> None:
    """Give a claimed index back."""
    with contextlib.suppress(OSError):
        fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()
