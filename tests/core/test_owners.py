"""An owner is gone only when that is provable from here: same boot, same PID namespace, and its
pid now names no process or one that started at another time."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from proxyfleet.core.owners import Owner, current_owner, owner_gone, provably_gone, start_time

HERE = Owner(pid=4242, start_time=1000, pid_namespace=4026531836, boot_id="boot-a")


@pytest.mark.parametrize(("boot_id", "namespace", "now", "gone"), [
    ("boot-a", 4026531836, None, True),  # no process has the pid
    ("boot-a", 4026531836, 2000, True),  # the pid was reused by a later process
    ("boot-a", 4026531836, 1000, False),  # it still runs
    ("boot-a", 4026532000, None, False),  # another PID namespace: its pid means nothing here
    ("boot-b", 4026531836, None, False),  # another boot (or machine)
])
def test_gone_only_when_provable(boot_id: str, namespace: int, now: int | None, gone: bool) -> None:
    assert provably_gone(HERE, boot_id, namespace, now) is gone


def test_an_owner_travels_as_labels_and_an_old_or_broken_record_proves_nothing() -> None:
    labels = HERE.as_labels("io.proxyfleet.")
    assert labels["io.proxyfleet.owner-pid"] == "4242"
    assert Owner.from_labels(labels, "io.proxyfleet.") == HERE
    assert Owner.from_labels({"io.proxyfleet.owner-pid": "4242"}, "io.proxyfleet.") is None  # the old format
    assert Owner.from_labels({**labels, "io.proxyfleet.owner-start-time": "x"}, "io.proxyfleet.") is None
    assert Owner.from_labels({**labels, "io.proxyfleet.owner-pid": "0"}, "io.proxyfleet.") is None


def test_this_process_is_not_gone_and_a_reaped_child_is() -> None:
    me = current_owner()
    assert me.pid == os.getpid() and me.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert start_time(me.pid) == me.start_time
    assert not owner_gone(me)
    assert owner_gone(dataclasses.replace(me, start_time=me.start_time + 1))  # our pid, another start: reused
    assert not owner_gone(dataclasses.replace(me, pid_namespace=me.pid_namespace + 1, pid=999_999_999))
    child = subprocess.Popen(["true"])
    child.wait()
    assert owner_gone(dataclasses.replace(me, pid=child.pid))


def test_a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields(tmp_path: Path) -> None:
    program = tmp_path / "a b) (c"
    program.symlink_to("/bin/sleep")
    process = subprocess.Popen([str(program), "30"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{process.pid}/comm").read_text().strip() != "a b) (c":  # until its exec is done
            assert time.monotonic() < deadline, "the program never ran"
            time.sleep(0.01)
        started = start_time(process.pid)
        # started after us, in clock ticks since boot (a shifted field would read 0, itrealvalue)
        assert started is not None and started >= current_owner().start_time > 0
    finally:
        process.kill()
        process.wait()
