"""Vendor proxies' configuration directories (``{config_dir}``), one per proxy start.

They hold what the proxy needs — an htpasswd file, keys — and, once handed to the proxy's user,
whatever the proxy writes there. So they live under a parent only proxyfleet writes (mode 0711:
a proxy user reaches its own directory by name but lists nobody's), each with a record of its
owner beside it (``core/owneddirs``). A directory whose owner was killed outright (``SIGKILL``: no
``finally`` ran) is removed by the next start's ``sweep`` once its owner is provably gone; one
without a record, or whose owner may live, stays.
"""

from __future__ import annotations

from pathlib import Path

from proxyfleet.core import owneddirs
from proxyfleet.core.owners import Owner
from proxyfleet.core.privatedirs import runtime_directory

PREFIX = "proxy-"
RECORD = owneddirs.RECORD
record_path = owneddirs.record_path
remove = owneddirs.remove


def default_parent() -> Path:
    """``proxies/`` in this user's runtime directory (``/run/proxyfleet/proxies`` as root)."""
    return runtime_directory() / "proxies"


def make(parent: Path) -> Path:
    """A new, empty configuration directory (0700, ours until handed over) below ``parent``, its
    owner (this process) recorded. Raises ``NotPrivateError`` when ``parent`` is not ours alone."""
    return owneddirs.make(parent, PREFIX)


def recorded_owner(parent: Path, name: str) -> Owner | None:
    """The owner recorded for ``parent/name`` (None: no record, or not one of ours)."""
    return owneddirs.recorded_owner(parent, name)


def sweep(parent: Path) -> list[Path]:
    """Remove the configuration directories below ``parent`` whose owner is provably gone."""
    return owneddirs.sweep(parent, PREFIX)
