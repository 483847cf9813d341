"""What a service unit's own files give its processes' environment, as systemd 252 composes it:
the ``Environment=`` and ``EnvironmentFile=`` settings of its fragment and drop-ins in order (a
later one overriding, an empty one resetting), then each environment file's contents over them.
Pure: the files arrive as text, so the same rules serve a simulated node's manager and a judge
reading a real node's files over SSH."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from proxyfleet.core.systemd.execenvironment import (
    EnvironmentFileRef,
    Warnings,
    environment_file_setting,
    environment_setting,
    service_environment,
)
from proxyfleet.core.systemd.specifiers import SpecifierContext
from proxyfleet.core.systemd.unitfiles import parse_unit_file


@dataclass(frozen=True)
class UnitSettings:
    """A service unit's environment settings, as its files set them."""

    environment: dict[str, str]  # Environment=, composed
    environment_files: tuple[EnvironmentFileRef, ...]  # EnvironmentFile=, in order


def unit_settings(files: Iterable[tuple[str, str]], context: SpecifierContext, warnings: Warnings) -> UnitSettings:
    """The settings of a unit whose files (path, text) are its fragment then its drop-ins, in the
    order systemd reads them; what systemd ignores gets its warning in ``warnings``."""
    environment: dict[str, str] = {}
    refs: list[EnvironmentFileRef] = []
    for path, text in files:
        for assignment in parse_unit_file(text, path, warnings):
            if assignment.section != "Service":
                continue
            if assignment.key == "Environment":
                environment_setting(assignment.value, context, environment, warnings, path, assignment.line)
            elif assignment.key == "EnvironmentFile":
                environment_file_setting(assignment.value, context, refs, warnings, path, assignment.line)
    return UnitSettings(environment, tuple(refs))


def start_environment(settings: UnitSettings, manager: dict[str, str], read: Callable[[str], str | None],
                      warnings: Warnings) -> dict[str, str]:
    """The environment a start of the unit gets: ``manager``'s block, its ``Environment=`` over
    it, its environment files (``read``: a path's text now, None when missing) over that;
    ``EnvironmentFileError`` when one is missing and not optional (the start fails)."""
    files = [(ref, read(ref.path)) for ref in settings.environment_files]
    return service_environment({**manager, **settings.environment}, files, warnings)
