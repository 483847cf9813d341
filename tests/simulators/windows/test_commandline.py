"""Command lines as Windows splits and builds them: CommandLineToArgvW, Windows PowerShell 5.1's
native argument passing and its own parameters, and cmd.exe's /c quote rule."""

from __future__ import annotations

import base64

import pytest

from proxyfleet.simulators.windows.commandline import (
    UsageError,
    cmd_command_text,
    join_arguments,
    parse_powershell_arguments,
    split_command_line,
)


def test_split_follows_the_c_runtime_rules() -> None:
    assert split_command_line('a "b c" d') == ["a", "b c", "d"]
    assert split_command_line(r'"a\"b" c\\d') == ['a"b', r"c\\d"]
    assert split_command_line(r'"x\\" y') == ["x\\", "y"]  # 2n backslashes before a quote: n, quote ends
    assert split_command_line(r"C:\k\x.ps1 -f") == [r"C:\k\x.ps1", "-f"]


def test_powershell_51_passes_native_arguments_naively() -> None:
    assert join_arguments(["a b", "", 'say "hi"']) == '"a b" "say "hi""'  # empty dropped, quotes unescaped


def test_powershell_parameters() -> None:
    script = base64.b64encode("Get-Date".encode("utf-16-le")).decode()
    invocation = parse_powershell_arguments(["-NoP", "-NonI", "-ep", "Bypass", "-enc", script])
    assert invocation.command == "Get-Date"
    assert invocation.options == {"NoProfile": True, "NonInteractive": True, "ExecutionPolicy": "Bypass"}
    assert parse_powershell_arguments(["-Command", "-"]).read_stdin
    assert parse_powershell_arguments(["Write-Output", "x"]).command == "Write-Output x"
    with pytest.raises(UsageError, match="not properly encoded"):
        parse_powershell_arguments(["-EncodedCommand", "!!!"])
    with pytest.raises(UsageError, match="Missing argument for parameter -File"):
        parse_powershell_arguments(["-File"])


def test_cmd_strips_the_first_and_last_quote_after_c() -> None:
    assert cmd_command_text(["/c", '"dir "C:\\k""']) == ('dir "C:\\k"', True)
    assert cmd_command_text(["/c", "echo", "hi"]) == ("echo hi", True)
    assert cmd_command_text(["echo"]) == (None, False)
