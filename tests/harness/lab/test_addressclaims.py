"""Lab address blocks are claimed with a lock the kernel drops when the process ends."""

import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.harness.lab.addressclaims import MAX_INDEX, NoFreeLabIndex, claim_lab_index, release


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
