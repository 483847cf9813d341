"""Expressions evaluated as Windows PowerShell 5.1 does."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


@pytest.mark.parametrize(("script", "expected"), [
    ("1 + 2 * 3", "7"),
    ("'a' + 1", "a1"),
    ("7 / 2", "3.5"),
    ("6 / 2", "3"),
    ("'ab' * 3", "ababab"),
    ("(1,2,3).Count", "3"),
    ("@(1,2) + 3 -join ','", "1,2,3"),
    ("'HTTP_Proxy' -eq 'http_proxy'", "True"),
    ("'HTTP_Proxy' -ceq 'http_proxy'", "False"),
    ("1,2,3,2 -eq 2 -join '+'", "2+2"),
    ("'quay.io' -like '*.io'", "True"),
    ("'a.b.c' -split '\\.' -join '|'", "a|b|c"),
    ("'x=1' -replace '(\\w)=(\\d)', '$2=$1'", "1=x"),
    ("'127.0.0.1' -match '^(?<first>\\d+)\\.'; $Matches.first", "True\n127"),
    ("$null -eq $x", "True"),
    ("[int]'42' + 1", "43"),
    ("[string]$null -eq ''", "True"),
    ("'{0}-{1}' -f 'a', 5", "a-5"),
    ("$h = @{ Key = 'v' }; $h.key; $h['KEY']", "v\nv"),
    ("\"sum $(1 + 1) and $env:NOPE.\"", "sum 2 and ."),
    ("'a,b,,c'.Split(',').Count", "4"),
    ("' x '.Trim().ToUpper()", "X"),
    ("if (0) { 'yes' } elseif ('') { 'empty' } else { 'no' }", "no"),
    ("foreach ($i in 1..3) { $i * 10 }", "10\n20\n30"),
    ("$list = @(); $list += 'a'; $list += 'b'; $list.Count", "2"),
    ("(Get-Service kubelet).Status -eq 'Running'", "True"),
    ("[Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes('hé'))", "aMOp"),
    ("[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('aMOp'))", "hé"),
    ("try { throw 'boom' } catch { \"caught: $($_.Exception.Message)\" }", "caught: boom"),
    ("[void](1 + 1); 'after'", "after"),
    ("$null = 'discarded'; 'kept'", "kept"),
])
async def test_expressions(machine: WindowsMachine, script: str, expected: str) -> None:
    result = await ps(machine, script)
    assert result.stderr == ""
    assert result.stdout.replace("\r\n", "\n").strip("\n") == expected
    assert result.exit_code == 0
