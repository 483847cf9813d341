"""The .NET surface scripts use: [Environment] by target (machine scope through the registry, never the running session), and how values are stored."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT
from proxyfleet.simulators.windows.session import Session
from tests.simulators.windows.powershell.scripts import ENV_KEY
from tests.support import ps


async def test_machine_environment_through_dotnet_and_registry(machine: WindowsMachine) -> None:
    await ps(machine, "[Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://proxy:3128', 'Machine')")
    key = machine.registry.key(MACHINE_ENVIRONMENT)
    assert key is not None and key.get("HTTP_PROXY").data == "http://proxy:3128"  # type: ignore[union-attr]
    read = await ps(machine, f"(Get-ItemProperty -Path '{ENV_KEY}' -Name HTTP_PROXY).HTTP_PROXY;"
                             f"Get-ItemPropertyValue '{ENV_KEY}' -Name http_proxy")
    assert read.stdout.split() == ["http://proxy:3128", "http://proxy:3128"]
    await ps(machine, "[System.Environment]::SetEnvironmentVariable('HTTP_PROXY', $null, "
                      "[EnvironmentVariableTarget]::Machine)")
    assert key.get("HTTP_PROXY") is None


async def test_empty_string_deletes_like_dotnet(machine: WindowsMachine) -> None:
    await ps(machine, "[Environment]::SetEnvironmentVariable('NO_PROXY', 'a,b', 'Machine')")
    await ps(machine, "[Environment]::SetEnvironmentVariable('NO_PROXY', '', 'Machine')")
    assert "NO_PROXY" not in machine.machine_environment()


async def test_machine_scope_does_not_change_the_running_session(machine: WindowsMachine) -> None:
    session = Session(machine)
    result = await ps(machine, "[Environment]::SetEnvironmentVariable('HTTPS_PROXY', 'http://p:1', 'Machine');"
                               "\"[$env:HTTPS_PROXY]\"", session)
    assert result.stdout.strip() == "[]"
    fresh = await ps(machine, "$env:HTTPS_PROXY")
    assert fresh.stdout.strip() == "http://p:1"


@pytest.mark.parametrize("value", [
    "it's", 'say "hi"', "$(Remove-Item C:\\k -Recurse)", "a;b", "tick`n", "\u2019curly\u2018", "100%",
])
async def test_values_quoted_correctly_are_stored_verbatim(machine: WindowsMachine, value: str) -> None:
    quoted = "'" + "".join(c + c if c in "'\u2018\u2019\u201a\u201b" else c for c in value) + "'"
    result = await ps(machine, f"[Environment]::SetEnvironmentVariable('HTTP_PROXY', {quoted}, 'Machine')")
    assert result.exit_code == 0, result.stderr
    assert machine.machine_environment()["HTTP_PROXY"] == value
    assert machine.filesystem.exists("C:\\k")  # nothing was executed
