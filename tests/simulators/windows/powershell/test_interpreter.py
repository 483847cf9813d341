"""Language semantics: values, operators, variables, errors and exit codes."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.budgets import Budget
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


async def test_exit_code_comes_from_exit(machine: WindowsMachine) -> None:
    assert (await ps(machine, "exit 7")).exit_code == 7
    assert (await ps(machine, "'x'; exit")).exit_code == 0


async def test_step_budget_stops_runaway_scripts(machine: WindowsMachine) -> None:
    result = await Interpreter(Session(machine), budget=Budget(steps=1000)).run("foreach ($i in 1..5000) { $i }")
    assert result.exit_code == 1
    assert "limit of 1000 statements" in result.stderr
