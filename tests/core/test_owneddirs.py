"""Directories with their owner recorded beside them: made private, swept once the owner is
provably gone — and only those of the prefix asked for (harness/lab/test_configdirs.py covers the
sweep's cases through the configuration directories)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from proxyfleet.core import owneddirs
from proxyfleet.core.owners import current_owner
from tests.support import dead_owner


def test_a_sweep_takes_only_its_own_prefix(tmp_path: Path) -> None:
    parent = tmp_path / "shared"
    sockets = owneddirs.make(parent, "mitmdump-")
    proxies = owneddirs.make(parent, "proxy-")
    assert stat.S_IMODE(sockets.stat().st_mode) == 0o700 and stat.S_IMODE(parent.stat().st_mode) == 0o711
    assert owneddirs.recorded_owner(parent, sockets.name) == current_owner()
    for directory in (sockets, proxies):  # both owned by a process killed outright
        owneddirs.record_path(directory).write_text(json.dumps(dead_owner().as_labels()))
    assert owneddirs.sweep(parent, "mitmdump-") == [sockets]
    assert not sockets.exists() and proxies.is_dir()
