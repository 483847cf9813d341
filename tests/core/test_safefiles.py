"""Reading, listing, handing over and removing files in a directory someone else writes: no link
is followed (not as the file, not as a parent directory), nothing but regular files is opened, and
reads are bounded."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import threading
from pathlib import Path, PurePosixPath

import pytest

from proxyfleet.core.safefiles import (
    UnsafeFileError,
    chown_tree,
    entries,
    read_named,
    read_regular,
    regular_files,
    remove_tree,
)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (device nodes, chown to another user)")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file only root may read, outside the directory the other side writes."""
    path = tmp_path / "secret"
    path.write_text("TOP SECRET\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def theirs(tmp_path: Path) -> Path:
    """The directory the other side (a proxy, a container) writes."""
    path = tmp_path / "theirs"
    path.mkdir()
    return path


def test_a_regular_file_is_read_up_to_its_limit_and_a_tail_from_a_whole_line(theirs: Path) -> None:
    (theirs / "cache.log").write_text("first line\nsecond line\nthird\n")
    assert read_regular(theirs, "cache.log", 1000) == b"first line\nsecond line\nthird\n"
    assert read_regular(theirs, "cache.log", 5) == b"first"
    assert read_regular(theirs, "cache.log", 14, tail=True) == b"third\n"  # "d line\n" was cut: left out
    (theirs / "sub").mkdir()
    (theirs / "sub" / "a.log").write_text("x")
    assert read_regular(theirs.parent, PurePosixPath("theirs/sub/a.log"), 10) == b"x"


def test_a_link_is_never_followed_as_the_file_or_as_a_parent(theirs: Path, secret: Path) -> None:
    (theirs / "cache.log").symlink_to(secret)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_regular(theirs, "cache.log", 1000)
    (theirs / "logs").symlink_to(secret.parent)  # a directory link: what is behind it is not ours to read
    with pytest.raises(UnsafeFileError):
        read_regular(theirs, "logs/secret", 1000)
    with pytest.raises(UnsafeFileError, match="not a path below"):
        read_regular(theirs, "../secret", 1000)
    with pytest.raises(UnsafeFileError, match="not a path below"):
        read_regular(theirs, str(secret), 1000)


def test_a_fifo_is_refused_without_blocking(theirs: Path) -> None:
    os.mkfifo(theirs / "cache.log")  # nobody writes it: an open for reading would wait forever
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(read_regular(theirs, "cache.log", 1000))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert outcome, "reading a FIFO blocked"
    assert isinstance(outcome[0], UnsafeFileError) and "not a regular file" in str(outcome[0])


@needs_root
def test_a_device_is_refused_without_being_opened(theirs: Path) -> None:
    os.mknod(theirs / "cache.log", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless if read
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_regular(theirs, "cache.log", 1000)


def test_a_named_file_may_be_a_link_its_user_chose(tmp_path: Path) -> None:
    target = tmp_path / "real.conf"
    target.write_text("http_port 3128\n")
    (tmp_path / "chosen.conf").symlink_to(target)
    assert read_named(tmp_path / "chosen.conf", 100) == b"http_port 3128\n"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafeFileError):
        read_named(tmp_path / "fifo", 100)


def test_entries_are_listed_with_their_kind_and_links_are_not_followed(theirs: Path, secret: Path) -> None:
    (theirs / "a.log").write_text("a")
    (theirs / "b.log").symlink_to(secret)
    (theirs / "c").mkdir()
    os.mkfifo(theirs / "d.log")
    assert entries(theirs) == [("a.log", "file"), ("b.log", "link"), ("c", "directory"), ("d.log", "other")]
    assert entries(theirs.parent, "theirs/c") == []
    (theirs / "e").symlink_to(secret.parent)
    with pytest.raises(UnsafeFileError):
        entries(theirs, "e")


def test_a_tree_is_read_without_its_links_fifos_or_oversized_files(tmp_path: Path, secret: Path) -> None:
    source = tmp_path / "config"
    (source / "nested").mkdir(parents=True)
    (source / "squid.conf").write_text("conf")
    (source / "nested" / "passwd").write_text("htpasswd")
    (source / "environ").symlink_to("/proc/self/environ")
    (source / "stolen").symlink_to(secret)
    (source / "kube").symlink_to(secret.parent)  # a linked directory: nothing in it is taken
    os.mkfifo(source / "pipe")
    (source / "big").write_bytes(b"x" * 101)
    files, skipped = regular_files(source, limit=100)
    assert files == [(PurePosixPath("nested/passwd"), b"htpasswd"), (PurePosixPath("squid.conf"), b"conf")]
    assert sorted(map(str, skipped)) == ["big (larger than 100 bytes)", "environ (a symbolic link)",
                                         "kube (a symbolic link)", "pipe (not a regular file)",
                                         "stolen (a symbolic link)"]
    (tmp_path / "named").symlink_to(source)  # the directory itself may be a link its user chose
    assert regular_files(tmp_path / "named", limit=100)[0] == files


@needs_root
def test_handing_a_tree_over_changes_links_not_what_they_point_at(theirs: Path, secret: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    (theirs / "sub").mkdir()
    (theirs / "sub" / "file").write_text("x")
    (theirs / "sub" / "link").symlink_to(secret)
    chown_tree(theirs, nobody.pw_uid, nobody.pw_gid)
    for path in (theirs, theirs / "sub", theirs / "sub" / "file"):
        assert path.stat().st_uid == nobody.pw_uid
    assert os.lstat(theirs / "sub" / "link").st_uid == nobody.pw_uid
    assert secret.stat().st_uid == 0  # the link's target stays root's


def test_removing_a_tree_removes_links_not_their_targets(tmp_path: Path, secret: Path) -> None:
    assert shutil.rmtree.avoids_symlink_attacks  # Linux: rmtree works on descriptors
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "file").write_text("x")
    (tree / "a" / "outside").symlink_to(secret.parent)
    (tree / "a" / "secret").symlink_to(secret)
    assert remove_tree(tree)
    assert not tree.exists() and secret.read_text() == "TOP SECRET\n"
    assert (tmp_path / "secret").exists()
    link = tmp_path / "link"
    link.symlink_to(secret.parent)
    assert remove_tree(link)  # a link at the top: the link goes, what it points at stays
    assert not os.path.lexists(link) and secret.exists()
    assert remove_tree(tmp_path / "never-was")
