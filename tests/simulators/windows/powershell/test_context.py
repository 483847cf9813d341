"""A runspace's variables: they persist between runs, and read-only ones refuse assignment."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


async def test_variables_persist_in_a_runspace(machine: WindowsMachine) -> None:
    interpreter = Interpreter(Session(machine))
    await interpreter.run("$counter = 41")
    assert (await interpreter.run("$counter + 1")).stdout.strip() == "42"


async def test_read_only_variables(machine: WindowsMachine) -> None:
    result = await ps(machine, "$true = 1")
    assert "Cannot overwrite variable true because it is read-only or constant." in result.stderr
