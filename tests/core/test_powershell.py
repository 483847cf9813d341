"""A PowerShell literal is the value itself, whatever quotes, dollars or backticks it holds: the
simulated Windows PowerShell 5.1 (whose lexer shares the quote set) reads it back unchanged."""

from __future__ import annotations

import json

import pytest

from proxyfleet.core.powershell import powershell_literal
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


@pytest.mark.parametrize("value", ["it's", "a\u2019b\u2018c\u201ad\u201be", "''", "$env:PATH `n \"q\" $(whoami)",
                                   "line\nbreak", ""])
async def test_a_literal_is_the_value_itself(machine: WindowsMachine, value: str) -> None:
    result = await ps(machine, f"{powershell_literal(value)} | ConvertTo-Json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == value
