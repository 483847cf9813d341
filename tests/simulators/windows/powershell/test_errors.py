"""Errors in PowerShell's words: statement- and script-terminating errors, -ErrorAction, throw with its position, .NET exceptions wrapped, unknown types and methods."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_statement_terminating_error_lets_the_script_continue(machine: WindowsMachine) -> None:
    result = await ps(machine, "nope; 'still running'")
    assert "still running" in result.stdout
    assert result.exit_code == 0  # the last statement succeeded


async def test_error_action_preference_stop_halts_the_script(machine: WindowsMachine) -> None:
    result = await ps(machine, "$ErrorActionPreference = 'Stop'; Get-Item C:\\nope; 'not reached'")
    assert "not reached" not in result.stdout
    assert "Cannot find path 'C:\\nope' because it does not exist." in result.stderr
    assert result.exit_code == 1


async def test_error_action_parameter(machine: WindowsMachine) -> None:
    quiet = await ps(machine, "Get-Item C:\\nope -ErrorAction SilentlyContinue; $?")
    assert quiet.stderr == "" and quiet.stdout.strip() == "False"
    caught = await ps(machine, "try { Get-Item C:\\nope -ErrorAction Stop } catch { 'caught' }")
    assert caught.stdout.strip() == "caught" and caught.stderr == ""


async def test_throw_is_reported_with_position(machine: WindowsMachine) -> None:
    result = await ps(machine, "'before'\nthrow \"bad thing\"")
    assert result.exit_code == 1
    assert result.stdout.strip() == "before"
    assert result.stderr.startswith("bad thing\nAt line:2 char:1\n+ throw \"bad thing\"\n")


async def test_unknown_type_and_method(machine: WindowsMachine) -> None:
    result = await ps(machine, "[Nope.Type]::Go()")
    assert result.stderr.startswith("Unable to find type [Nope.Type].")
    method = await ps(machine, "'x'.Frobnicate()")
    assert method.stderr.startswith(
        "Method invocation failed because [System.String] does not contain a method named 'Frobnicate'.")
    null = await ps(machine, "$nothing.Trim()")
    assert null.stderr.startswith("You cannot call a method on a null-valued expression.")


async def test_dotnet_exceptions_are_wrapped_like_powershell(machine: WindowsMachine) -> None:
    result = await ps(machine, "[Convert]::FromBase64String('not base64!')")
    assert result.stderr.startswith(
        'Exception calling "FromBase64String" with "1" argument(s): "The input is not a valid Base-64 string')
