"""State, keep and runtime directories: ours alone or refused with a line that says whose it is,
its mode and what to do; a missing one is made private."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from proxyfleet.core.privatedirs import RUNTIME_MODE, NotPrivateError, private_directory, runtime_directory

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's needs root")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_missing_directory_is_made_private_and_its_parents_with_the_default_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        made = private_directory(tmp_path / "a" / "b" / "state")
    finally:
        os.umask(old)
    assert made == tmp_path / "a" / "b" / "state"
    assert mode(made) == 0o700 and mode(tmp_path / "a") == 0o755
    assert private_directory(made) == made  # and accepted as it is, again


@pytest.mark.parametrize("wide", [0o770, 0o707, 0o777, 0o1777])
def test_a_directory_others_can_write_is_refused_with_its_owner_and_mode(tmp_path: Path, wide: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(wide)
    with pytest.raises(NotPrivateError) as raised:
        private_directory(shared)
    message = str(raised.value)
    assert str(shared) in message and f"mode {wide:04o}" in message and "chmod go-w" in message
    assert "\n" not in message
    assert mode(shared) == wide  # nothing of it changed


def test_a_readable_directory_of_ours_is_accepted(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o755)
    assert private_directory(kept) == kept and mode(kept) == 0o755


@needs_root
def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(NotPrivateError, match=rf"owned by nobody \(uid {nobody.pw_uid}\), mode 0700, not yours"):
        private_directory(theirs)
    # a link of theirs to a directory of ours: they could point it elsewhere later
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(NotPrivateError, match="symbolic link owned by nobody"):
        private_directory(link)


def test_a_link_of_ours_to_a_directory_of_ours_is_accepted_and_a_file_is_not(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(mine)
    assert private_directory(tmp_path / "link") == tmp_path / "link"
    (tmp_path / "file").write_text("")
    with pytest.raises(NotPrivateError, match="not a directory"):
        private_directory(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    with pytest.raises(NotPrivateError, match="to nothing"):
        private_directory(tmp_path / "dangling")


def test_the_runtime_directory_is_per_user_and_passable_not_listable(tmp_path: Path) -> None:
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    run.mkdir()
    tmp.mkdir()
    euid = os.geteuid()
    old = os.umask(0o077)  # a strict umask still lets the proxy user through
    try:
        if euid == 0:
            assert runtime_directory(0, {}, run, tmp) == run / "proxyfleet"
            assert mode(run / "proxyfleet") == RUNTIME_MODE
        xdg = tmp_path / "xdg"
        xdg.mkdir(mode=0o700)
        assert runtime_directory(1000, {"XDG_RUNTIME_DIR": str(xdg)}, run, tmp) == xdg / "proxyfleet"
        assert runtime_directory(1000, {}, run, tmp) == tmp / "proxyfleet-1000"
        assert mode(tmp / "proxyfleet-1000") == RUNTIME_MODE
    finally:
        os.umask(old)
    # made first by someone else (or made writable): refused, never used
    taken = tmp / "proxyfleet-1001"
    taken.mkdir()
    taken.chmod(0o777)
    with pytest.raises(NotPrivateError, match="others can write it"):
        runtime_directory(1001, {}, run, tmp)
