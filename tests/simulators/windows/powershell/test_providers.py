"""PowerShell drives: a path never leaves its drive, and Env: shows the session's variables."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_paths_cannot_leave_the_drive(machine: WindowsMachine) -> None:
    await ps(machine, "Set-Content -Path C:\\..\\..\\..\\escape.txt -Value x")
    assert (machine.filesystem.root / "escape.txt").exists()
    assert not (machine.filesystem.root.parent / "escape.txt").exists()
    other = await ps(machine, "Get-ChildItem D:\\")
    assert "Cannot find drive. A drive with the name 'D' does not exist." in other.stderr


async def test_environment_drive(machine: WindowsMachine) -> None:
    result = await ps(machine, "$env:FOO = 'bar'; (Get-Item Env:FOO).Value; Test-Path Env:\\FOO;"
                               "Remove-Item Env:FOO; Test-Path Env:FOO")
    assert result.stdout.split() == ["bar", "True", "False"]
