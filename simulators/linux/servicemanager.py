"""systemd as a proxy reconciler meets it on a node: units loaded once and kept until
``daemon-reload``, environment files read again at every start, and ``systemctl``'s own words.

The traps it reproduces (systemd.unit(5), systemctl(1), systemd 252):

- A unit file or drop-in changed on disk is not what ``restart`` uses: the manager keeps the
  definition it loaded until ``daemon-reload``, and ``systemctl`` says so ("Warning: The unit
  file, source configuration file or drop-ins of … changed on disk. Run 'systemctl daemon-reload'
  to reload units.") — a drop-in added, changed or removed all count.
- An ``EnvironmentFile=`` is read when the service starts: changing ``/etc/mco/proxy.env`` needs a
  restart, not a reload.
- A started process keeps the environment it started with: ``/proc/PID/environ`` tells.
- It keeps the CAs it loaded too: every modelled service (the kubelet, CRI-O, containerd) is a Go
  program, and Go reads the system bundle once per process (``truststores.go_roots``; read at the
  start here, where Go reads it at the first TLS handshake), so a CA extracted after a service
  started reaches it only when it restarts.
- A missing environment file that is not optional (``-``) fails the start: "Job for … failed
  because of unavailable resources or another system error."
- ``systemctl set-environment`` changes the manager's own environment: every service started
  after it gets it (below its units' ``Environment=``), until the manager goes — a reboot forgets
  it. ``environment_at_boot`` is what a unit's files alone give it: what survives a reboot.

The state is plain data; the files are the node's, under its root directory. Not modelled: unit
dependencies and ordering, templates' instances beyond their drop-ins, socket or timer
activation, ``ExecStart`` actually running (a started service is a record with a pid and an
environment), and ``systemctl`` verbs other than those below.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from proxyfleet.core.systemd.execenvironment import EnvironmentFileError, Warnings
from proxyfleet.core.systemd.specifiers import SpecifierContext
from proxyfleet.core.systemd.unitenvironment import UnitSettings, start_environment, unit_settings
from proxyfleet.simulators.linux.truststores import BundleTrust, go_roots
from proxyfleet.simulators.linux.unitpaths import UnitSources, unit_sources

# What the system manager passes every service before its own settings (a merged-/usr system).
MANAGER_ENVIRONMENT = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"}


def changed_on_disk(unit: str) -> str:
    """systemctl's warning for a unit whose files changed since it was loaded."""
    return (f"Warning: The unit file, source configuration file or drop-ins of {unit} changed on disk. "
            "Run 'systemctl daemon-reload' to reload units.")


def job_failed(unit: str) -> str:
    """systemctl's error for a start that failed for want of resources (a missing environment file)."""
    return (f"Job for {unit} failed because of unavailable resources or another system error.\n"
            f'See "systemctl status {unit}" and "journalctl -xeu {unit}" for details.')


@dataclass(frozen=True)
class LoadedUnit:
    """A unit as the manager loaded it: its files and what they set then."""

    name: str
    sources: UnitSources
    stamps: tuple[tuple[str, int], ...]  # (node path, mtime in ns) of every file read
    settings: UnitSettings  # its Environment= and EnvironmentFile= as the files set them then
    warnings: tuple[str, ...]  # systemd's, as it parsed them (its journal)


@dataclass(frozen=True)
class ServiceProcess:
    """A started service's main process: what ``/proc/PID/environ`` shows."""

    pid: int
    environment: dict[str, str]
    started_at: float  # the node's clock
    roots: BundleTrust | None = None  # the CAs it loaded (Go: once per process)


@dataclass(frozen=True)
class Outcome:
    """What a ``systemctl`` call prints and returns."""

    code: int
    stdout: str = ""
    stderr: str = ""


class UnitNotFound(LookupError):
    """No file for the unit anywhere on the load path."""


@dataclass
class ServiceManager:
    """One node's systemd (PID 1): loaded units, running services."""

    root: Path  # the node's /
    hostname: str = "worker-0"
    boot_id: str = "0" * 32  # this boot's (systemd's %b), set by ``boot``
    loaded: dict[str, LoadedUnit] = field(default_factory=dict)
    running: dict[str, ServiceProcess] = field(default_factory=dict)
    journal: list[str] = field(default_factory=list)
    wall_clock: Callable[[], float] = time.time
    # When each unit's main process last started (wall clock), kept after it stops, as systemd
    # keeps ExecMainStartTimestamp until the manager itself goes (a reboot).
    main_started: dict[str, float] = field(default_factory=dict)
    # ``systemctl set-environment``'s: the manager's runtime environment, gone at a reboot
    runtime_environment: dict[str, str] = field(default_factory=dict)
    _pids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def _stamps(self, sources: UnitSources) -> tuple[tuple[str, int], ...]:
        paths = [p for p in (sources.fragment, *sources.drop_ins) if p is not None]
        return tuple((p, (self.root / p.lstrip("/")).stat().st_mtime_ns) for p in paths)

    def load(self, unit: str) -> LoadedUnit:
        """Read the unit's files now, as ``daemon-reload`` (or a first use) does."""
        loaded = self._read_unit(unit)
        self.loaded[unit] = loaded
        self.journal += loaded.warnings
        return loaded

    def _read_unit(self, unit: str) -> LoadedUnit:
        """The unit as its files on disk define it now (nothing kept)."""
        sources = unit_sources(self.root, unit)
        if sources.fragment is None and not sources.drop_ins:
            raise UnitNotFound(f"Unit {unit} not found.")
        context = SpecifierContext(unit, fragment_path=sources.fragment or "", hostname=self.hostname,
                                   boot_id=self.boot_id)
        warnings = Warnings()
        paths = [p for p in (sources.fragment, *sources.drop_ins) if p is not None]
        texts = [(p, (self.root / p.lstrip("/")).read_bytes().decode("utf-8", "surrogateescape")) for p in paths]
        settings = unit_settings(texts, context, warnings)
        return LoadedUnit(unit, sources, self._stamps(sources), settings, tuple(warnings.lines))

    def environment_at_boot(self, unit: str) -> dict[str, str] | None:
        """The environment ``unit`` would start with at the next boot: its files on disk read
        afresh (as a new manager reads them), its environment files as they are now, and only the
        manager's boot environment — nothing set at runtime (``set-environment``). None: it would
        not start (no unit file, or an environment file missing that is not optional)."""
        try:
            return self._environment(self._read_unit(unit), MANAGER_ENVIRONMENT, Warnings())
        except (UnitNotFound, EnvironmentFileError):
            return None

    def _environment(self, loaded: LoadedUnit, manager: dict[str, str], warnings: Warnings) -> dict[str, str]:
        """What a start of ``loaded`` gets: ``manager``'s block, the unit's ``Environment=`` over
        it, its environment files as they are now over that (``EnvironmentFileError``: one is
        missing and not optional)."""
        return start_environment(loaded.settings, manager, self._read, warnings)

    def set_environment(self, assignments: dict[str, str]) -> None:
        """``systemctl set-environment``: services started from now on get these."""
        self.runtime_environment.update(assignments)

    def unset_environment(self, words: Iterable[str]) -> None:
        """``systemctl unset-environment``: a ``NAME`` removed whatever its value, a ``NAME=VALUE``
        only while it has that value (systemctl(1))."""
        for word in words:
            name, sep, value = word.partition("=")
            if not sep or self.runtime_environment.get(name) == value:
                self.runtime_environment.pop(name, None)

    def manager_environment(self) -> dict[str, str]:
        """The manager's environment block (``systemctl show-environment``)."""
        return {**MANAGER_ENVIRONMENT, **self.runtime_environment}

    def needs_daemon_reload(self, unit: str) -> bool:
        """Whether the unit's files on disk are not those it was loaded from (systemd's
        ``NeedDaemonReload``): a file changed, added or removed."""
        loaded = self.loaded.get(unit)
        if loaded is None:
            return False
        current = unit_sources(self.root, unit)
        if current != loaded.sources:
            return True
        try:
            return self._stamps(current) != loaded.stamps
        except FileNotFoundError:
            return True

    def daemon_reload(self) -> Outcome:
        """Load every loaded unit again from disk; running services keep their environment."""
        for unit in list(self.loaded):
            try:
                self.load(unit)
            except UnitNotFound:
                del self.loaded[unit]
        return Outcome(0)

    def _unit(self, unit: str) -> LoadedUnit:
        return self.loaded.get(unit) or self.load(unit)

    def _warn(self, unit: str) -> str:
        return changed_on_disk(unit) + "\n" if self.needs_daemon_reload(unit) else ""

    def start(self, unit: str, now: float = 0.0, verb: str = "start") -> Outcome:
        """Start ``unit`` unless it runs: its loaded settings, its environment files read now
        (``verb`` is the ``systemctl`` verb that asked, for its error)."""
        try:
            loaded = self._unit(unit)
        except UnitNotFound as exc:
            return Outcome(5, stderr=f"Failed to {verb} {unit}: {exc}\n")
        warning = self._warn(unit)
        if unit in self.running:
            return Outcome(0, stderr=warning)
        file_warnings = Warnings()
        try:
            environment = self._environment(loaded, self.manager_environment(), file_warnings)
        except EnvironmentFileError as exc:
            self.journal += [f"{unit}: {exc}", f"{unit}: Failed with result 'resources'."]
            return Outcome(1, stderr=warning + job_failed(unit) + "\n")
        self.journal += [f"{unit}: {line}" for line in file_warnings.lines]
        self.running[unit] = ServiceProcess(next(self._pids), environment, now, go_roots(self.root))
        self.main_started[unit] = self.wall_clock()
        return Outcome(0, stderr=warning)

    def boot(self, enabled: Iterable[str], now: float = 0.0, boot_id: str | None = None) -> dict[str, Outcome]:
        """A (re)boot, ``boot_id`` its id when given: a new manager reads every unit afresh — no
        ``daemon-reload`` needed after a reboot — and starts the enabled services in order;
        nothing of the last boot runs."""
        self.shutdown()
        if boot_id is not None:
            self.boot_id = boot_id
        return {unit: self.start(unit, now) for unit in enabled}

    def shutdown(self) -> None:
        """Power off: every service stopped, nothing loaded, the runtime environment gone."""
        self.loaded.clear()
        self.runtime_environment.clear()
        self.running.clear()
        self.main_started.clear()

    def stop(self, unit: str) -> Outcome:
        """Stop ``unit`` (a unit with no file anywhere is "not loaded", as systemctl says)."""
        if unit not in self.loaded:
            try:
                self.load(unit)
            except UnitNotFound:
                return Outcome(5, stderr=f"Failed to stop {unit}: Unit {unit} not loaded.\n")
        warning = self._warn(unit)
        self.running.pop(unit, None)
        return Outcome(0, stderr=warning)

    def restart(self, unit: str, now: float = 0.0) -> Outcome:
        """Stop and start with the definition loaded — not the files on disk, if they changed."""
        self.running.pop(unit, None)
        return self.start(unit, now, "restart")

    def _read(self, path: str) -> str | None:
        try:
            return (self.root / path.lstrip("/")).read_bytes().decode("utf-8", "surrogateescape")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
