"""Values and conversions: casts, ordered and plain hashtables, arrays and their flattening, and
PowerShell's truthiness (any non-empty string is $true)."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


@pytest.mark.parametrize(("script", "expected"), [
    ("[int]'42' + 1", "43"),
    ("[bool]'false'", "True"),                # a non-empty string is true, whatever it says
    ("[bool]''", "False"),
    ("$x = [ordered]@{b=1; a=2}; $x.Keys -join ','", "b,a"),
    ("@{a=1}.a", "1"),
    ("@{A=1}.a", "1"),                         # hashtable keys are case-insensitive
    ("@(@(1,2)).Count", "2"),                 # @() does not wrap an array again
    ("[string]::IsNullOrEmpty('')", "True"),
    ("$a = @(); $a += 'x'; $a.Count", "1"),
])
async def test_values(machine: WindowsMachine, script: str, expected: str) -> None:
    result = await ps(machine, script)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == expected


async def test_a_failed_conversion_is_powershells_error(machine: WindowsMachine) -> None:
    result = await ps(machine, "[int]'abc'")
    assert 'Cannot convert value "abc" to type "System.Int32"' in result.stderr
