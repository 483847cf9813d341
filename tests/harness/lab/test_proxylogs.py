"""A proxy's own output is quoted only bounded, escaped and redacted; the logs in its
{config_dir} are copied (nothing followed, regular files only), never quoted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from proxyfleet.core.safefiles import UnsafeFileError
from proxyfleet.harness.lab.proxylogs import copy_logs, kept_directory, quote_output, read_log, visible


def test_control_characters_are_made_visible_newlines_and_tabs_kept() -> None:
    assert visible("a\tb\nc\x1b[31mred\x07\r\x00\u202eevil\x7f") == "a\tb\nc\\x1b[31mred\\x07\\r\\x00\\u202eevil\\x7f"
    assert visible("grüße ✓") == "grüße ✓"


def test_quoted_output_is_bounded_and_redacted_even_behind_a_control_character() -> None:
    assert quote_output("x" * 5000 + "END", limit=100) == "x" * 97 + "END"
    # A carriage return would end the URL for the redaction and let the password's end past it.
    quoted = quote_output("FATAL: cannot reach http://svc:pa\rss@proxy.example:3128/\n")
    assert "pa" not in quoted.replace("proxy", "") and "ss@" not in quoted
    assert "http://***:***@proxy.example:3128/" in quoted


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    path = tmp_path / "proxies" / "proxy-abc"
    path.mkdir(parents=True)
    return path


def test_logs_are_copied_private_and_links_and_fifos_left_out_and_named(tmp_path: Path, config_dir: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret\n")
    (config_dir / "cache.log").write_text("FATAL: no shared memory\n")
    (config_dir / "access.log").write_text("a line\n")
    (config_dir / "store.log").symlink_to(secret)
    os.mkfifo(config_dir / "pipe.log")
    (config_dir / "squid.conf").write_text("not a log")
    into = tmp_path / "kept"
    into.mkdir()
    copied, skipped = copy_logs(config_dir, into, exclude=frozenset([config_dir / "access.log"]))
    assert copied == [into / "cache.log"]
    assert (into / "cache.log").read_text() == "FATAL: no shared memory\n"
    assert stat.S_IMODE((into / "cache.log").stat().st_mode) == 0o600
    assert sorted(map(str, skipped)) == ["pipe.log (not a regular file)", "store.log (a symbolic link)"]
    assert sorted(p.name for p in into.iterdir()) == ["cache.log"]
    copy_logs(config_dir, into, append=True)  # a restart's logs are added to the earlier ones
    assert (into / "cache.log").read_text() == "FATAL: no shared memory\n" * 2


def test_a_log_is_read_without_following_a_link_in_the_config_dir(tmp_path: Path, config_dir: Path) -> None:
    (config_dir / "access.log").write_text("1700000000.000 1 127.10.0.1 TCP_TUNNEL/200 0 CONNECT quay.io:443 - "
                                           "HIER_DIRECT/127.30.0.1 -\n")
    assert read_log(config_dir, config_dir / "access.log").startswith(b"1700000000.000")
    (config_dir / "logs").symlink_to(tmp_path)  # a directory link: refused as a parent too
    (tmp_path / "secret.log").write_text("secret")
    with pytest.raises(UnsafeFileError):
        read_log(config_dir, config_dir / "logs" / "secret.log")
    outside = tmp_path / "var-log"  # a path the user gave (--proxy-access-log): its directory is theirs
    outside.mkdir()
    (outside / "access.log").symlink_to(tmp_path / "secret.log")
    with pytest.raises(UnsafeFileError):
        read_log(config_dir, outside / "access.log")


def test_a_kept_directory_is_private_and_outlives_the_call() -> None:
    kept = kept_directory()
    try:
        assert kept.name.startswith("proxyfleet-proxy-logs-") and stat.S_IMODE(kept.stat().st_mode) == 0o700
    finally:
        kept.rmdir()
