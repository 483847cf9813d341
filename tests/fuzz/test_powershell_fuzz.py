"""Property: whatever text a node receives, the simulated PowerShell (and cmd.exe) answers in
PowerShell's (or cmd's) own words: no Python exception escapes, no "simulator does not model"
fallback is hit, no host path leaks, and every command ends within its budget."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path

from hypothesis import given, settings

from proxyfleet.simulators.windows.cmdshell import run_line
from proxyfleet.simulators.windows.powershell.budgets import Budget
from proxyfleet.simulators.windows.powershell.errors import ParseError
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.powershell.parsing import parse
from proxyfleet.simulators.windows.session import Session
from tests.fuzz.strategies import EXAMPLES, powershell_text
from tests.support import new_machine

# Module-wide (hypothesis examples share it); the object deletes the directory at exit.
_DRIVE = tempfile.TemporaryDirectory(prefix="proxyfleet-fuzz-")
MACHINE = new_machine(Path(_DRIVE.name))


def _run(text: str, shell: str = "powershell") -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        interpreter = Interpreter(Session(MACHINE), budget=Budget(seconds=5, steps=20_000))
        if shell == "cmd":
            native = await run_line(interpreter, text)
            return native.stdout, native.stderr
        result = await interpreter.run(text)
        return result.stdout, result.stderr

    return asyncio.run(go())


@settings(max_examples=EXAMPLES, deadline=None)
@given(powershell_text)
def test_the_parser_accepts_or_refuses_with_a_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):  # a refusal in PowerShell's words is an answer
        parse(text)


@settings(max_examples=EXAMPLES, deadline=None)
@given(powershell_text)
def test_the_interpreter_answers_everything_in_powershells_words(text: str) -> None:
    stdout, stderr = _run(text)
    assert "SimulatorLimitation" not in stderr, (text, stderr)
    assert str(MACHINE.filesystem.root) not in stdout + stderr
    MACHINE.filesystem.mkdir("C:\\k")  # keep the drive usable for the next example


@settings(max_examples=EXAMPLES, deadline=None)
@given(powershell_text)
def test_cmd_answers_everything_in_cmds_words(text: str) -> None:
    stdout, stderr = _run(text.replace("\n", " "), shell="cmd")
    assert "SimulatorLimitation" not in stderr, (text, stderr)
    assert str(MACHINE.filesystem.root) not in stdout + stderr
