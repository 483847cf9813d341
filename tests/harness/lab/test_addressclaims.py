"""Lab address blocks are claimed with a lock the kernel drops when the process ends."""

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from proxyfleet.core.privatedirs import NotPrivateError, runtime_directory
from proxyfleet.harness.lab.addressclaims import LOCK_PREFIX, MAX_INDEX, NoFreeLabIndex, claim_lab_index, release


def test_claims_are_exclusive_and_given_back(tmp_path: Path) -> None:
    first, held = claim_lab_index(tmp_path)
    second, other = claim_lab_index(tmp_path)
    assert (first, second) == (1, 2)
    release(held)
    again, third = claim_lab_index(tmp_path)
    assert again == 1
    for handle in (other, third):
        release(handle)


def test_another_process_holding_an_index_is_respected_until_it_ends(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from pathlib import Path; from proxyfleet.harness.lab.addressclaims import claim_lab_index\n"
        f"index, handle = claim_lab_index(Path({str(tmp_path)!r}), first=5)\n"
        "print(index, flush=True); sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "5"
    index, handle = claim_lab_index(tmp_path, first=5)
    assert index == 6
    release(handle)
    holder.kill()  # killed outright: the kernel releases its lock
    holder.wait()
    index, handle = claim_lab_index(tmp_path, first=5)
    assert index == 5
    release(handle)


def test_when_every_index_is_taken_the_error_says_so(tmp_path: Path) -> None:
    index, handle = claim_lab_index(tmp_path, first=MAX_INDEX)
    with pytest.raises(NoFreeLabIndex, match="in use by running labs"):
        claim_lab_index(tmp_path, first=MAX_INDEX)
    release(handle)
    assert index == MAX_INDEX


def test_lock_files_are_private_and_never_opened_through_a_link(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    _, handle = claim_lab_index(locks, first=3)
    release(handle)
    assert stat.S_IMODE(locks.stat().st_mode) == 0o700  # made private
    assert stat.S_IMODE((locks / f"{LOCK_PREFIX}3.lock").stat().st_mode) == 0o600
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    (locks / f"{LOCK_PREFIX}4.lock").symlink_to(victim)  # planted where the next lock file goes
    with pytest.raises(OSError, match="symbolic link"):
        claim_lab_index(locks, first=4)
    assert victim.read_text() == "root's file\n"


def test_a_lock_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: anyone could take an index first, or plant a link
    with pytest.raises(NotPrivateError, match="others can write it"):
        claim_lab_index(shared)


def test_by_default_the_locks_live_in_the_private_runtime_directory() -> None:
    index, handle = claim_lab_index(first=MAX_INDEX - 1)
    try:
        where = Path(os.readlink(f"/proc/self/fd/{handle.fileno()}"))
        assert where.parent == runtime_directory() and where.name == f"{LOCK_PREFIX}{index}.lock"
        assert where.parent != Path(tempfile.gettempdir())  # not beside every other user's files
    finally:
        release(handle)
