"""A node's boots and outages, whatever its kind: each power-on a record with a fresh boot id (what
``/proc/sys/kernel/random/boot_id`` shows on Linux, a new id per boot on Windows too), its number
and when it came up and went down — the lab's evidence of which reboots happened —; each interval
its SSH server refused connections (``Outage``), with what the lab's observers saw at its edges
(``OutageWatch``); and whether a reboot's sessions lost their exit status."""

from __future__ import annotations

import datetime as dt
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


def utc_now() -> dt.datetime:
    """The lab's wall clock, as boot records keep it."""
    return dt.datetime.now(dt.UTC)


@dataclass
class BootRecord:
    """One boot of one node."""

    boot_id: str
    number: int
    booted_at: dt.datetime
    shutdown_at: dt.datetime | None = None

    @classmethod
    def after(cls, boots: list[BootRecord], now: dt.datetime) -> BootRecord:
        """The boot that follows ``boots`` at ``now``: numbered next, a fresh id, and later than
        the last one's start even where the clock did not move (two boots are never one instant)."""
        if boots and now <= boots[-1].booted_at:
            now = boots[-1].booted_at + dt.timedelta(microseconds=1)
        return cls(uuid.uuid4().hex, len(boots) + 1, now)


@dataclass
class Outage:
    """One interval in which the node's SSH server refused connections. ``at_down``/``at_up`` hold
    what the node's observer (the lab: "was the Node cordoned?") saw at each edge."""

    down_at: dt.datetime
    up_at: dt.datetime | None = None
    at_down: Any = None
    at_up: Any = None
    # The pods a drain should have moved that were still bound to the node as it went down
    # (None: not observed).
    pods_at_down: tuple[str, ...] | None = None
    # When the restart that caused it was asked for (None: not a restart, say an outage): what the
    # reconciler knew then is what it could apply, while going down takes the machine's own time.
    requested_at: dt.datetime | None = None


@dataclass
class OutageWatch:
    """A node's outages and who watches their edges: observers called with ``subject`` (the node)
    — what they return is kept on the ``Outage``; an observer that fails is logged, never allowed
    to break a reboot — and listeners told, on the loop, the moment it goes down."""

    subject: Any
    outages: list[Outage] = field(default_factory=list)
    outage_observer: Callable[[Any], Any] | None = None  # the lab: "is the Node cordoned?"
    pods_observer: Callable[[Any], tuple[str, ...]] | None = None  # the lab: pods a drain should have moved
    down_listeners: list[Callable[[Any], None]] = field(default_factory=list)
    # Asked as a reboot begins: True and this reboot never ends (a fault a scenario sets for
    # whichever node reboots first); ``hang_next``: the next one never ends, whatever the gate says.
    reboot_gate: Callable[[Any], bool] | None = None
    hang_next: bool = False

    def hangs(self) -> bool:
        """Whether the reboot beginning now never ends (decided before anyone hears it go down;
        ``hang_next`` is used up by it)."""
        gate = self.reboot_gate
        hang = self.hang_next or (gate is not None and gate(self.subject))
        self.hang_next = False
        return hang

    def _observe(self, observer: Callable[[Any], Any] | None) -> Any:
        if observer is None:
            return None
        try:
            return observer(self.subject)
        except Exception:  # evidence only: never let an observer break a reboot
            log.exception("an outage observer of %s failed", getattr(self.subject, "name", self.subject))
            return None

    def went_down(self, now: dt.datetime, requested_at: dt.datetime | None = None) -> Outage:
        """Record the node going down at ``now`` (``requested_at``: when its restart was asked for)."""
        outage = Outage(now, at_down=self._observe(self.outage_observer), requested_at=requested_at,
                        pods_at_down=self._observe(self.pods_observer))
        self.outages.append(outage)
        for listener in list(self.down_listeners):
            listener(self.subject)
        return outage

    def came_up(self, now: dt.datetime) -> None:
        """Close the open outage, if any, at ``now``."""
        if self.outages and self.outages[-1].up_at is None:
            self.outages[-1].up_at = now
            self.outages[-1].at_up = self._observe(self.outage_observer)


class ExitStatusLoss:
    """Whether the sessions that end while a node reboots lose their exit status (Windows'
    Restart-Computer over SSH, OCPBUGS-90077; sshd killed first on Linux): decided once per
    reboot by a generator seeded from the lab's seed and the node's name, so a run repeats, and
    counted as it happens (lab evidence)."""

    def __init__(self, seed: int, name: str) -> None:
        self._dice = random.Random(f"{seed}:{name}")
        self.lost = False  # this reboot's decision
        self.count = 0  # sessions that ended without one

    def decide(self, rate: float) -> None:
        """A reboot was asked for: whether its sessions lose theirs, at ``rate``."""
        self.lost = self._dice.random() < rate

    def keeps(self, rebooting: bool) -> bool:
        """Whether a session ending now sends its exit status (counted when it does not)."""
        if rebooting and self.lost:
            self.count += 1
            return False
        return True


class WatchedOutages:
    """What the lab and the judge read and set on a node of either kind, kept in its ``watch``
    (an ``OutageWatch`` the node makes as it is built)."""

    watch: OutageWatch

    @property
    def outages(self) -> list[Outage]:
        return self.watch.outages

    @property
    def down_listeners(self) -> list[Callable[[Any], None]]:
        return self.watch.down_listeners

    @property
    def reboot_gate(self) -> Callable[[Any], bool] | None:
        return self.watch.reboot_gate

    @reboot_gate.setter
    def reboot_gate(self, gate: Callable[[Any], bool] | None) -> None:
        self.watch.reboot_gate = gate

    def hang_next_reboot(self) -> None:
        """The next reboot goes down and never comes back (a failed update, a hung firmware)."""
        self.watch.hang_next = True

    @property
    def outage_observer(self) -> Callable[[Any], Any] | None:
        return self.watch.outage_observer

    @outage_observer.setter
    def outage_observer(self, observer: Callable[[Any], Any] | None) -> None:
        self.watch.outage_observer = observer

    @property
    def pods_observer(self) -> Callable[[Any], tuple[str, ...]] | None:
        return self.watch.pods_observer

    @pods_observer.setter
    def pods_observer(self, observer: Callable[[Any], tuple[str, ...]] | None) -> None:
        self.watch.pods_observer = observer
