"""A known_hosts file read once: the keys it lists per address and port, and a clear error for a
file that is not one."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from proxyfleet.core.knownhosts import KnownHosts, KnownHostsError


def test_keys_are_listed_per_address_and_port(tmp_path: Path) -> None:
    first, second = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))
    path = tmp_path / "known_hosts"
    path.write_text(f"[10.0.0.5]:2222 {first.export_public_key().decode().strip()}\n"
                    f"[10.0.0.6]:2222 {second.export_public_key().decode().strip()}\n")
    known = KnownHosts(path)
    assert known.keys("10.0.0.5", 2222) == [first.export_public_key("openssh").decode().strip()]
    assert known.keys("10.0.0.6", 2222) == [second.export_public_key("openssh").decode().strip()]
    assert known.keys("10.0.0.7", 2222) == []


def test_a_file_that_is_not_known_hosts_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad").write_text("10.0.0.5\n")  # a host without a key
    with pytest.raises(KnownHostsError, match=r"cannot read known hosts .*bad"):
        KnownHosts(tmp_path / "bad")
    with pytest.raises(KnownHostsError, match=r"cannot read known hosts .*missing"):
        KnownHosts(tmp_path / "missing")
