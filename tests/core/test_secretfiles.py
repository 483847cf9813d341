"""Secret files are private from their first byte, also when they replace a wider file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from proxyfleet.core.secretfiles import PRIVATE, open_private_append, write_private


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_private_creates_0600_and_replaces_a_wider_file(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "key.pem"
    write_private(target, "secret")
    assert mode(target) == PRIVATE and target.read_text() == "secret"
    target.chmod(0o644)
    write_private(target, b"rotated")
    assert mode(target) == PRIVATE and target.read_bytes() == b"rotated"
    assert [p.name for p in target.parent.iterdir()] == ["key.pem"]  # no temporary left behind


def test_append_creates_a_private_log_and_appends(tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    old = os.umask(0)  # even a permissive umask does not widen it
    try:
        with open_private_append(log) as handle:
            handle.write(b"one\n")
        with open_private_append(log) as handle:
            handle.write(b"two\n")
    finally:
        os.umask(old)
    assert mode(log) == PRIVATE and log.read_bytes() == b"one\ntwo\n"
