"""cmd.exe as OpenSSH's default shell: its phases (expansion, then carets, quotes, operators and
redirections), its built-ins, its errors and limits."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.cmdshell import MAX_LINE, CmdSyntaxError, expand_variables, parse_line, run_line
from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session


async def cmd(machine: WindowsMachine, line: str) -> tuple[str, str, int]:
    result = await run_line(Interpreter(Session(machine)), line)
    return result.stdout, result.stderr, result.exit_code


def test_parse_splits_operators_and_redirections_outside_quotes() -> None:
    commands = parse_line('echo a^&b & type "C:\\k\\x & y.txt" 2>nul && whoami >>C:\\k\\w.txt || ver 2>&1')
    assert [(c.operator, c.text) for c in commands] == [
        ("", "echo a&b"), ("&", 'type "C:\\k\\x & y.txt"'), ("&&", "whoami"), ("||", "ver")]
    assert commands[1].stderr == "nul" and commands[2].stdout == ("C:\\k\\w.txt", True)
    assert commands[3].stderr == "&1"


@pytest.mark.parametrize(("line", "message"), [
    ("dir | findstr k", "does not support pipes"),
    ("(echo a) & echo b", "parenthesised"),
    ("echo a >", "The syntax of the command is incorrect."),
    ("& echo a", "& was unexpected at this time."),
])
def test_what_cmd_or_the_simulator_refuses(line: str, message: str) -> None:
    with pytest.raises(CmdSyntaxError, match=message):
        parse_line(line)


def test_variables_expand_when_the_line_is_read() -> None:
    assert expand_variables("%ComSpec% %nope% %path:~0,3%", {"COMSPEC": "C:\\cmd.exe"}) == \
        "C:\\cmd.exe %nope% %path:~0,3%"


async def test_builtins_programs_and_errors(machine: WindowsMachine) -> None:
    out, err, code = await cmd(machine, "set X=1&& echo %X% & echo ok && nope || echo fallback")
    assert out.split() == ["%X%", "ok", "fallback"]
    assert "'nope' is not recognized as an internal or external command," in err
    out, err, code = await cmd(machine, "nope")
    assert code == 9009
    out, _, code = await cmd(machine, "hostname & exit /b 7 & echo never")
    assert (out.strip(), code) == ("WIN-TEST", 7)
    out, _, _ = await cmd(machine, 'powershell.exe -NoProfile -Command "Write-Output $env:COMPUTERNAME"')
    assert out.strip() == "WIN-TEST"


async def test_redirections_write_the_nodes_files(machine: WindowsMachine) -> None:
    _, _, code = await cmd(machine, "echo first> C:\\k\\out.txt & echo second>>C:\\k\\out.txt & nope 2>nul")
    assert machine.filesystem.read_bytes("C:\\k\\out.txt") == b"first\r\nsecond\r\n"
    assert code == 9009
    out, err, _ = await cmd(machine, "type C:\\k\\out.txt & type C:\\k\\missing.txt 2>&1")
    assert out == "first\r\nsecond\r\nThe system cannot find the file specified.\n" and err == ""
    _, err, code = await cmd(machine, "echo x > C:\\k")
    assert (err, code) == ("Access is denied.\n", 1)


async def test_powershell_text_sent_to_a_cmd_shell_is_not_recognized(machine: WindowsMachine) -> None:
    _, err, code = await cmd(machine, "[Environment]::GetEnvironmentVariable('HTTP_PROXY', 'Machine')")
    assert "'[Environment]::GetEnvironmentVariable('HTTP_PROXY'' is not recognized" in err
    assert code == 9009


async def test_cmd_refuses_lines_longer_than_it_accepts(machine: WindowsMachine) -> None:
    _, err, code = await cmd(machine, "echo " + "x" * MAX_LINE)
    assert (err, code) == ("The command line is too long.\n", 1)
