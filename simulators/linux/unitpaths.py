"""Where systemd 252 finds a system service's unit file and drop-ins (systemd.unit(5), "Unit File
Load Path" and the drop-in rules), on a node's root directory.

The main file is the first found along the load path. Drop-ins are every ``*.conf`` in the
unit's ``.d/`` directories along the same path — and, for a dashed name, in its prefixes'
(``kube-proxy.service`` also reads ``kube-.service.d/``), and in ``service.d/`` — applied in
lexicographic order of their file names whichever directory holds them; of two with the same
name, the one earlier on the path (``/etc`` before ``/run`` before ``/usr/lib``) replaces the
other, and one linked to ``/dev/null`` masks it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# systemd 252's system unit load path, highest priority first (``systemd-analyze unit-paths``),
# as on a merged-/usr distribution (RHCOS, Fedora; Debian 12 adds /lib, a link to /usr/lib there).
LOAD_PATH = (
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/systemd/generator.late",
)


@dataclass(frozen=True)
class UnitSources:
    """The files systemd reads for one unit, in the order it applies them (paths on the node)."""

    fragment: str | None  # the main unit file (None: only drop-ins, or nothing)
    drop_ins: tuple[str, ...]
    masked: bool = False  # the unit file is a link to /dev/null


def _dropin_directories(unit: str) -> list[str]:
    """The ``.d`` directory names searched for ``unit`` in each load path directory, lowest
    precedence first: the unit type's (``service.d``), then each dashed prefix's (shortest
    first), then the template's, then the unit's own."""
    name, _, kind = unit.rpartition(".")
    stem = name.partition("@")[0] if "@" in name else name
    names = [f"{kind}.d"]
    parts = stem.split("-")
    names += [f"{'-'.join(parts[:n])}-.{kind}.d" for n in range(1, len(parts))]
    if "@" in name:  # a template's instance reads the template's drop-ins too
        names.append(f"{stem}@.{kind}.d")
    names.append(f"{unit}.d")
    return names


def _is_masked(path: Path) -> bool:
    return path.is_symlink() and os.readlink(path) == "/dev/null"


def unit_sources(root: Path, unit: str) -> UnitSources:
    """What systemd would read for ``unit`` on the node whose ``/`` is ``root``."""
    fragment = None
    masked = False
    for directory in LOAD_PATH:
        candidate = root / directory.lstrip("/") / unit
        if candidate.is_symlink() or candidate.exists():
            fragment = f"{directory}/{unit}"
            masked = _is_masked(candidate)
            break
    # The directories in systemd's order (``unit_file_find_dropin_paths``): each load path
    # directory, highest first, and in it the unit's own .d before its prefixes' and its type's;
    # of equally named files the first found wins (a masking link too, which then hides it).
    chosen: dict[str, str] = {}
    for directory in LOAD_PATH:
        for dropin_dir in reversed(_dropin_directories(unit)):
            found = root / directory.lstrip("/") / dropin_dir
            if not found.is_dir():
                continue
            for entry in found.iterdir():
                if entry.name.endswith(".conf"):
                    chosen.setdefault(entry.name, f"{directory}/{dropin_dir}/{entry.name}")
    drop_ins = tuple(path for _, path in sorted(chosen.items()) if not _is_masked(root / path.lstrip("/")))
    return UnitSources(fragment, drop_ins, masked)
