"""Vendor proxies' configuration directories (``{config_dir}``), one per proxy start.

They hold what the proxy needs — an htpasswd file, keys — and, once handed to the proxy's user,
whatever the proxy writes there. So they live under a parent only proxyfleet writes (mode 0711:
a proxy user reaches its own directory by name but lists nobody's), each with a record of its
owner beside it (``<name>.owner``, 0600, where the proxy cannot write). A directory whose owner
was killed outright (``SIGKILL``: no ``finally`` ran) is removed by the next start's ``sweep``
once its owner is provably gone; one without a record, or whose owner may live, stays.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

from proxyfleet.core.owners import Owner, current_owner, owner_gone
from proxyfleet.core.privatedirs import RUNTIME_MODE, private_directory, runtime_directory
from proxyfleet.core.safefiles import entries, read_regular, remove_tree
from proxyfleet.core.secretfiles import write_private

PREFIX = "proxy-"
RECORD = ".owner"
_RECORD_LIMIT = 4096


def default_parent() -> Path:
    """``proxies/`` in this user's runtime directory (``/run/proxyfleet/proxies`` as root)."""
    return runtime_directory() / "proxies"


def _parent(parent: Path) -> Path:
    private_directory(parent, RUNTIME_MODE)
    if stat.S_IMODE(os.stat(parent).st_mode) != RUNTIME_MODE:
        os.chmod(parent, RUNTIME_MODE)  # ours: a 077 umask would keep the proxy user out
    return parent


def record_path(directory: Path) -> Path:
    """Where the owner of ``directory`` is recorded."""
    return directory.parent / (directory.name + RECORD)


def make(parent: Path) -> Path:
    """A new, empty configuration directory (0700, ours until handed over) below ``parent``, its
    owner (this process) recorded. Raises ``NotPrivateError`` when ``parent`` is not ours alone."""
    directory = Path(tempfile.mkdtemp(prefix=PREFIX, dir=_parent(parent)))
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


def sweep(parent: Path) -> list[Path]:
    """Remove the configuration directories below ``parent`` whose owner is provably gone, and
    records left without a directory; what was removed."""
    removed: list[Path] = []
    try:
        listing = entries(parent)
    except FileNotFoundError:
        return removed
    names = {name for name, _ in listing}
    for name, kind in listing:
        if not name.startswith(PREFIX):
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
