"""The command table: cmdlets, their aliases and the native programs present on a node.

Lookup follows PowerShell's order: alias, then cmdlet, then a program on ``PATH`` (or by full
path). Names that match nothing produce the "is not recognized" error.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proxyfleet.simulators.windows.filesystem import WindowsPathError, normalize
from proxyfleet.simulators.windows.powershell.binding import CmdletSpec

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.context import NativeResult
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter

NativeHandler = Callable[["Interpreter", str, list[str], str | None], Awaitable["NativeResult"]]

# Windows PowerShell 5.1's built-in aliases for the supported cmdlets. Note ``curl`` and
# ``wget``: in 5.1 they are Invoke-WebRequest, not the programs.
ALIASES = {
    "gci": "Get-ChildItem", "ls": "Get-ChildItem", "dir": "Get-ChildItem",
    "gi": "Get-Item", "gp": "Get-ItemProperty", "gpv": "Get-ItemPropertyValue",
    "sp": "Set-ItemProperty", "rp": "Remove-ItemProperty",
    "ri": "Remove-Item", "rm": "Remove-Item", "rmdir": "Remove-Item", "del": "Remove-Item",
    "erase": "Remove-Item", "rd": "Remove-Item",
    "gc": "Get-Content", "cat": "Get-Content", "type": "Get-Content", "sc": "Set-Content",
    "gsv": "Get-Service", "sasv": "Start-Service", "spsv": "Stop-Service",
    "echo": "Write-Output", "write": "Write-Output",
    "select": "Select-Object", "where": "Where-Object", "?": "Where-Object",
    "foreach": "ForEach-Object", "%": "ForEach-Object", "sort": "Sort-Object",
    "iwr": "Invoke-WebRequest", "curl": "Invoke-WebRequest", "wget": "Invoke-WebRequest",
    "cd": "Set-Location", "chdir": "Set-Location", "sl": "Set-Location",
    "pwd": "Get-Location", "gl": "Get-Location", "ni": "New-Item",
    "gcim": "Get-CimInstance", "gps": "Get-Process", "ps": "Get-Process", "sleep": "Start-Sleep",
    "md": "mkdir",
}


@dataclass(frozen=True)
class NativeCommand:
    """A program on the node's disk, e.g. ``C:\\Windows\\System32\\hostname.exe``."""

    name: str
    directory: str
    handler: NativeHandler

    @property
    def path(self) -> str:
        return f"{self.directory}\\{self.name}"


class CommandTable:
    def __init__(self, cmdlets: Iterable[CmdletSpec], natives: Iterable[NativeCommand],
                 aliases: dict[str, str] | None = None) -> None:
        self.cmdlets = {spec.name.lower(): spec for spec in cmdlets}
        self.natives = {native.name.lower(): native for native in natives}
        self.aliases = {k.lower(): v for k, v in (aliases or ALIASES).items()}

    def with_natives(self, natives: Iterable[NativeCommand]) -> CommandTable:
        """A copy with more programs installed (later ones win)."""
        merged = list(self.natives.values()) + list(natives)
        return CommandTable(self.cmdlets.values(), merged, self.aliases)

    def resolve(self, name: str) -> CmdletSpec | NativeCommand | None:
        lowered = name.lower()
        if "\\" in lowered and lowered.split("\\", 1)[0].startswith("microsoft.powershell"):
            lowered = lowered.split("\\", 1)[1]
        target = self.aliases.get(lowered)
        if target is not None and target.lower() in self.cmdlets:
            return self.cmdlets[target.lower()]
        if lowered in self.cmdlets:
            return self.cmdlets[lowered]
        if "\\" in lowered or "/" in lowered:
            try:
                full = normalize(name)
            except WindowsPathError:
                return None
            directory, _, base = full.rpartition("\\")
            native = self._native(base)
            if native is not None and native.directory.lower() == directory.lower():
                return native
            return None
        return self._native(lowered)

    def _native(self, base: str) -> NativeCommand | None:
        base = base.lower()
        return self.natives.get(base) or self.natives.get(base + ".exe")


@functools.cache
def default_commands() -> CommandTable:
    """Every cmdlet of the subset and the node's built-in programs."""
    from proxyfleet.simulators.windows.powershell.cmdlets import ALL_CMDLETS
    from proxyfleet.simulators.windows.powershell.native import BUILTIN_PROGRAMS

    return CommandTable(ALL_CMDLETS, BUILTIN_PROGRAMS)
