"""Directories a process makes under a shared parent and that must not outlive it by long: each
gets a record of its owner beside it (``<name>.owner``, 0600, in the parent, where whatever is
later put in the directory cannot write), and the next process to make one there removes those
whose owner is provably gone (``owners``: killed outright, so no ``finally`` ran). One without a
record, or whose owner may live, stays.

Vendor proxies' configuration directories use it (``harness/lab/configdirs``), and so do the lab
mitmdumps' control-socket directories (a socket path must be short, so not below a lab's state).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

from proxyfleet.core.owners import Owner, current_owner, owner_gone
from proxyfleet.core.privatedirs import RUNTIME_MODE, private_directory
from proxyfleet.core.safefiles import entries, read_regular, remove_tree
from proxyfleet.core.secretfiles import write_private

RECORD = ".owner"
_RECORD_LIMIT = 4096


def parent_directory(parent: Path, mode: int = RUNTIME_MODE) -> Path:
    """``parent``, ours alone with ``mode`` (0711: a proxy user reaches its own directory by name
    but lists nobody's)."""
    private_directory(parent, mode)
    if stat.S_IMODE(os.stat(parent).st_mode) != mode:
        os.chmod(parent, mode)  # ours: a 077 umask would keep a proxy user out
    return parent


def record_path(directory: Path) -> Path:
    """Where the owner of ``directory`` is recorded."""
    return directory.parent / (directory.name + RECORD)


def make(parent: Path, prefix: str) -> Path:
    """A new, empty directory (0700) below ``parent`` named ``prefix…``, its owner (this process)
    recorded. Raises ``NotPrivateError`` when ``parent`` is not ours alone."""
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir=parent_directory(parent)))
    # After the directory: a sweep that sees it without a record leaves it alone.
    write_private(record_path(directory), json.dumps(current_owner().as_labels()))
    return directory


def remove(directory: Path) -> bool:
    """Delete ``directory`` (nothing in it followed) and its owner record; False if some was left."""
    removed = remove_tree(directory)
    if removed:
        record_path(directory).unlink(missing_ok=True)
    return removed


def recorded_owner(parent: Path, name: str) -> Owner | None:
    """The owner recorded for ``parent/name`` (None: no record, or not one of ours)."""
    try:
        data = json.loads(read_regular(parent, name + RECORD, _RECORD_LIMIT))
    except (OSError, ValueError):
        return None
    return Owner.from_labels(data) if isinstance(data, dict) else None


def sweep(parent: Path, prefix: str) -> list[Path]:
    """Remove the ``prefix…`` directories below ``parent`` whose owner is provably gone, and records
    left without a directory; what was removed."""
    removed: list[Path] = []
    try:
        listing = entries(parent)
    except FileNotFoundError:
        return removed
    names = {name for name, _ in listing}
    for name, kind in listing:
        if not name.startswith(prefix):
            continue
        if name.endswith(RECORD):
            base = name.removesuffix(RECORD)
            owner = recorded_owner(parent, base)
            if base not in names and owner is not None and owner_gone(owner):
                with contextlib.suppress(FileNotFoundError):
                    (parent / name).unlink()
            continue
        owner = recorded_owner(parent, name)
        if kind == "directory" and owner is not None and owner_gone(owner) and remove(parent / name):
            removed.append(parent / name)
    return removed
