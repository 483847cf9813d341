"""Hostile commands: every one ends in a PowerShell error with 5.1's wording, within the node's
time and memory budget, without freezing the event loop the whole fleet shares, and without
showing the host's paths."""

from __future__ import annotations

import asyncio

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.budgets import Budget
from proxyfleet.simulators.windows.powershell.interpreter import YIELD_EVERY, Interpreter
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


@pytest.mark.parametrize(("script", "message", "error_id"), [
    ("+'a'", 'Cannot convert value "a" to type "System.Int32". Error: "Input string was not in a correct format."',
     "InvalidCastFromStringToInteger"),
    ("'a'*'b'", 'Cannot convert value "b" to type "System.Int32". Error: "Input string was not in a correct format."',
     "InvalidCastFromStringToInteger"),
    ("1..'a'", 'Cannot convert value "a" to type "System.Int32".', "InvalidCastFromStringToInteger"),
    ("[int]'1e400'", 'Cannot convert value "1e400" to type "System.Int32". Error: "Value was either too large',
     "InvalidCastParseTargetInvocation"),
    ("[int]'3000000000'", "Value was either too large or too small for an Int32.", "InvalidCastParseTargetInvocation"),
    ("[long]('9' * 5000)", "Value was either too large or too small", "InvalidCastParseTargetInvocation"),
    ("[Environment]::SetEnvironmentVariable('A','b','c','Machine')",
     'Cannot find an overload for "SetEnvironmentVariable" and the argument count: "4".', "MethodCountCouldNotFindBest"),
    ("'abc'.Substring()", 'Cannot find an overload for "Substring" and the argument count: "0".',
     "MethodCountCouldNotFindBest"),
    ("'a' > C:\\k", "out-file : Access to the path 'C:\\k' is denied.",
     "FileOpenFailure,Microsoft.PowerShell.Commands.OutFileCommand"),
    ("'a' > Q:\\x", "out-file : Cannot find drive. A drive with the name 'Q' does not exist.",
     "DriveNotFound,Microsoft.PowerShell.Commands.OutFileCommand"),
    ("'a' > C:\\nowhere\\x", "out-file : Could not find a part of the path 'C:\\nowhere\\x'.",
     "FileOpenFailure,Microsoft.PowerShell.Commands.OutFileCommand"),
    ("$x = 'a' * 200000000", "Exception of type 'System.OutOfMemoryException' was thrown.", "System.OutOfMemoryException"),
    ("$x = @(1, 2) * 100000000", "Exception of type 'System.OutOfMemoryException' was thrown.",
     "System.OutOfMemoryException"),
    ("$x = ('a' * 10000000) + ('b' * 10000000)", "OutOfMemoryException", "System.OutOfMemoryException"),
    ("$x = ('x' * 10000000) -replace 'x', 'yy'", "OutOfMemoryException", "System.OutOfMemoryException"),
    ("[IO.File]::ReadAllText('C:\\k')", "Access to the path 'C:\\k' is denied.", None),
])
async def test_hostile_commands_fail_in_powershell_words(machine: WindowsMachine, script: str, message: str,
                                                         error_id: str | None) -> None:
    result = await ps(machine, script + "; 'still running'")
    assert message in result.stderr, result.stderr
    if error_id is not None:
        assert f"FullyQualifiedErrorId : {error_id}\n" in result.stderr
    assert "still running" in result.stdout  # a statement-terminating error, the script goes on
    assert "Traceback" not in result.stderr and "simulator does not model" not in result.stderr


async def test_a_catastrophic_regular_expression_is_stopped(machine: WindowsMachine) -> None:
    result = await ps(machine, "('a' * 60 + '!') -match '^(a|aa)+$'; 'next'")
    assert "The RegEx engine has timed out" in result.stderr
    assert "FullyQualifiedErrorId : RegexMatchTimeoutException" in result.stderr
    assert result.stdout == "next\n"


async def test_a_runaway_loop_is_stopped_by_the_time_budget(machine: WindowsMachine) -> None:
    interpreter = Interpreter(Session(machine), budget=Budget(seconds=0.5))
    result = await interpreter.run("foreach ($i in 1..1000000) { $x = $i * 2 }; 'unreached'")
    assert "time limit of 0.5 seconds" in result.stderr
    assert result.exit_code == 1 and "unreached" not in result.stdout


async def test_a_long_loop_yields_to_the_other_sessions_on_the_loop(machine: WindowsMachine) -> None:
    # Counted in statements, not seconds: with a time budget a loaded machine could spend it before
    # the first yield (500 statements), and the test would depend on the machine's speed.
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    interpreter = Interpreter(Session(machine), budget=Budget(seconds=3600, steps=5 * YIELD_EVERY))
    result = await interpreter.run("foreach ($i in 1..1000000) { $x = $i * 2 }; 'unreached'")
    done.set()
    await task
    assert f"limit of {5 * YIELD_EVERY} statements" in result.stderr
    assert ticks >= 4  # it yielded every YIELD_EVERY statements: other nodes' sessions kept running


async def test_a_child_powershell_spends_the_parents_budget(machine: WindowsMachine) -> None:
    interpreter = Interpreter(Session(machine), budget=Budget(steps=300))
    result = await interpreter.run("powershell.exe -Command \"foreach (`$i in 1..1000) { `$i }\"")
    assert "limit of 300 statements" in result.stdout + result.stderr


async def test_removing_the_drive_removes_what_windows_would_and_refuses_the_rest(machine: WindowsMachine) -> None:
    machine.filesystem.write_bytes("C:\\k\\ca-bundle.crt", b"x")
    result = await ps(machine, "Remove-Item C:\\ -Recurse; Test-Path C:\\k; Test-Path C:\\Windows\\System32; "
                               "Test-Path C:\\")
    assert result.stdout.split() == ["False", "True", "True"]
    assert "Cannot remove item C:\\Windows\\System32: Access to the path 'C:\\Windows\\System32' is denied." \
        in result.stderr
    assert "RemoveFileSystemItemUnAuthorizedAccess" in result.stderr
    assert machine.filesystem.root.is_dir()


async def test_errors_never_show_host_paths(machine: WindowsMachine) -> None:
    host = str(machine.filesystem.root)
    scripts = ["Get-Content C:\\k", "[IO.File]::WriteAllText('C:\\k', 'x')", "[IO.File]::ReadAllBytes('C:\\nope')",
               "Set-Content -Path C:\\k -Value x", "Get-FileHash C:\\k", "'x' >> C:\\k",
               "New-Item -ItemType Directory C:\\Windows\\System32\\x\\y", "Remove-Item C:\\Windows -Recurse",
               "Import-Certificate -FilePath C:\\k -CertStoreLocation Cert:\\LocalMachine\\Root",
               "Get-ChildItem C:\\k\\nope", "[IO.File]::WriteAllText('C:\\k\\' + ('x' * 300), 'x')"]
    for script in scripts:
        result = await ps(machine, script)
        assert host not in result.stdout + result.stderr, (script, result.stderr)
        assert "Errno" not in result.stderr, (script, result.stderr)
