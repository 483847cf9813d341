"""Comparison, pattern, split/replace, containment, logical and format operators as Windows
PowerShell 5.1 evaluates them (case-insensitive by default; the left operand decides the type)."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


@pytest.mark.parametrize(("script", "expected"), [
    ("'a' -ne 'A'", "False"),                 # case-insensitive by default
    ("'a' -cne 'A'", "True"),
    ("'10' -lt 9", "True"),                   # a string on the left: compared as text
    ("9 -lt '10'", "True"),                   # a number on the left: the right is converted
    ("'quay.io' -like '*.IO'", "True"),
    ("'quay.io' -notlike 'docker*'", "True"),
    ("'x' -match '^X$'", "True"),
    ("'a,b' -split ',' -join '|'", "a|b"),
    ("'abc' -replace 'B','X'", "aXc"),
    ("@(1,2,3) -contains 2", "True"),
    ("1 -in @(1,2)", "True"),
    ("-not $true", "False"),
    ("$true -and $false", "False"),
    ("1 -band 3", "1"),
    ("'{0}-{1}' -f 'a','b'", "a-b"),
    ("$null -eq $null", "True"),
])
async def test_operators(machine: WindowsMachine, script: str, expected: str) -> None:
    result = await ps(machine, script)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == expected


async def test_match_fills_matches(machine: WindowsMachine) -> None:
    result = await ps(machine, "if ('proxy.corp:3128' -match '^(?<host>[^:]+):(\\d+)$') { $Matches.host; $Matches[2] }")
    assert result.stdout.split() == ["proxy.corp", "3128"]
