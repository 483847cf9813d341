"""Who owns a leftover (a proxy's container, its configuration directory): enough about the owning
process to prove, later and from another process, that it has ended.

A process id alone proves nothing: it names another process in another PID namespace (a shared
container engine, a CI runner's sibling container), after a reboot, or once reused. So an owner is
its pid, its start time (field 22 of ``/proc/PID/stat``, clock ticks since boot), its PID namespace
and the boot id; it is gone only when the namespace and boot are ours and that pid now names no
process, or one that started at another time. Whatever cannot be proven is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from proxyfleet.core.lifecycle import process_alive

PID = "owner-pid"
START_TIME = "owner-start-time"
PID_NAMESPACE = "owner-pid-namespace"
BOOT_ID = "owner-boot-id"


@dataclass(frozen=True)
class Owner:
    """An owning process, as recorded on what it owns."""

    pid: int
    start_time: int
    pid_namespace: int
    boot_id: str

    def as_labels(self, prefix: str = "") -> dict[str, str]:
        """The owner as string labels (a container's), each key after ``prefix``."""
        return {prefix + PID: str(self.pid), prefix + START_TIME: str(self.start_time),
                prefix + PID_NAMESPACE: str(self.pid_namespace), prefix + BOOT_ID: self.boot_id}

    @classmethod
    def from_labels(cls, labels: Mapping[str, str], prefix: str = "") -> Owner | None:
        """The owner ``as_labels`` recorded, or None when any part is missing or malformed (an older
        record, or someone else's: never proof of anything)."""
        try:
            numbers = [int(str(labels[prefix + key])) for key in (PID, START_TIME, PID_NAMESPACE)]
            boot_id = str(labels[prefix + BOOT_ID])
        except (KeyError, ValueError):
            return None
        if not boot_id or numbers[0] <= 0:
            return None
        return cls(numbers[0], numbers[1], numbers[2], boot_id)


def provably_gone(owner: Owner, boot_id: str, pid_namespace: int, start_time_now: int | None) -> bool:
    """Whether ``owner`` has ended, judged from this machine's ``boot_id`` and this process's
    ``pid_namespace``, with ``start_time_now`` the start time of the process now holding its pid
    (None: no process has it)."""
    if owner.boot_id != boot_id or owner.pid_namespace != pid_namespace:
        return False  # another machine, boot or namespace: its pid means nothing here
    return start_time_now is None or start_time_now != owner.start_time


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def start_time(pid: int) -> int | None:
    """The start time of process ``pid``: None when there is none (or only its zombie: it has
    ended); -1 when it exists but its ``/proc`` entry cannot be read (``hidepid``)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1 if process_alive(pid) else None
    # The command name (field 2) is in parentheses and may hold spaces and ")": split after the last.
    fields = text.rpartition(")")[2].split()  # fields[0] is field 3, the state
    return None if fields[0] in ("Z", "X") else int(fields[19])


def current_owner() -> Owner:
    """This process, as an owner."""
    pid = os.getpid()
    started = start_time(pid)
    assert started is not None and started >= 0
    return Owner(pid, started, pid_namespace(), boot_id())


def owner_gone(owner: Owner) -> bool:
    """Whether ``owner`` has provably ended (see ``provably_gone``); False when this machine's
    /proc cannot say."""
    try:
        here_boot, here_namespace = boot_id(), pid_namespace()
    except OSError:
        return False
    now = start_time(owner.pid) if owner.pid > 0 else None
    if now == -1:
        return False  # it exists and we cannot see when it started
    return provably_gone(owner, here_boot, here_namespace, now)
