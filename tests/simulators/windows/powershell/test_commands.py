"""Command lookup: an unknown command is not recognized, and the exit code says so."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_unknown_command_is_not_recognized_and_exit_code_is_one(machine: WindowsMachine) -> None:
    result = await ps(machine, "Get-Nothing -Now")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Get-Nothing : The term 'Get-Nothing' is not recognized as the name of a cmdlet, function, "
        "script file, or operable program.")
    assert "+ ~~~~~~~~~~~" in result.stderr
    assert "CategoryInfo          : ObjectNotFound: (Get-Nothing:String) [], CommandNotFoundException" \
        in result.stderr
