"""What sshd starts for a session. An exec request runs in the default shell, read from the
registry for every session as Win32-OpenSSH does: ``cmd.exe /c <command>`` when
``HKLM:\\SOFTWARE\\OpenSSH`` has no ``DefaultShell`` (Windows' own default), or
``powershell.exe -c <command>`` when it names PowerShell. A shell request gets an interactive
``PS C:\\...>`` prompt.

Output uses CRLF line endings, as a Windows host sends them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncssh

from proxyfleet.simulators.windows.cmdshell import VERSION_BANNER, run_line
from proxyfleet.simulators.windows.powershell.commands import CommandTable
from proxyfleet.simulators.windows.powershell.context import RunResult
from proxyfleet.simulators.windows.powershell.errors import ParseError
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.powershell.parsing import parse
from proxyfleet.simulators.windows.session import Session

BANNER = ("Windows PowerShell\r\nCopyright (C) Microsoft Corporation. All rights reserved.\r\n\r\n"
          "Try the new cross-platform PowerShell https://aka.ms/pscore6\r\n\r\n")
# Parse errors that mean "the statement is not finished yet": the prompt continues with >>.
_INCOMPLETE = {"MissingEndCurlyBrace", "MissingEndParenthesisInExpression",
               "TerminatorExpectedAtEndOfString", "MissingEndParenthesisInSubexpression",
               "IncompleteHashLiteral", "MissingStatementBlock", "MissingEndParenthesisInMethodCall"}
MAX_INTERACTIVE_BUFFER = 1 << 20
MAX_COMMAND_LINE = 32767  # CreateProcessW's limit, in characters
SHELL_PREFIX = '"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe" -c ""'
CMD_PREFIX = '"C:\\Windows\\System32\\cmd.exe" /c '


def to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


async def run_exec(process: asyncssh.SSHServerProcess[str], session: Session,
                   commands: CommandTable, keeps_exit_status: Callable[[], bool] = lambda: True) -> None:
    """Run an exec request in the default shell. ``keeps_exit_status`` is asked at the end: a
    node whose restart is cutting sessions closes the channel without one."""
    command = process.command or ""
    shell = session.machine.ssh_default_shell()
    prefix = SHELL_PREFIX if shell == "powershell" else CMD_PREFIX
    if len(command) + len(prefix) > MAX_COMMAND_LINE:
        # sshd starts `<shell> <option> <command>`; CreateProcess caps the line length.
        process.stderr.write("The filename or extension is too long.\r\n")
        process.exit(1)
        return
    interpreter = Interpreter(session, commands)
    if shell == "powershell":
        result = await interpreter.run(command)
    else:
        native = await run_line(interpreter, command)
        result = RunResult(native.stdout, native.stderr, native.exit_code)
    process.stdout.write(to_crlf(result.stdout))
    process.stderr.write(to_crlf(result.stderr))
    if not keeps_exit_status():
        process.close()  # the channel ends with no exit-status message
        return
    process.exit(result.exit_code & 0xFFFFFFFF if result.exit_code >= 0 else 1)


def _incomplete(text: str) -> bool:
    try:
        parse(text)
    except ParseError as error:
        return error.problems[0].error_id in _INCOMPLETE
    return False


class BarePtyInput:
    """Lines from a PTY that asyncssh's line editor does not serve (the client sent an empty
    terminal type, as OpenSSH does when ``TERM`` is unset): Windows' console still ends a line
    at CR as well as at LF, and echoes what it reads."""

    def __init__(self, process: asyncssh.SSHServerProcess[str]) -> None:
        self.process = process
        self.pending = ""

    async def readline(self) -> str:
        while True:
            for index, char in enumerate(self.pending):
                if char in "\r\n":
                    line, self.pending = self.pending[:index], self.pending[index + 1:]
                    if char == "\r" and self.pending.startswith("\n"):
                        self.pending = self.pending[1:]
                    self.process.stdout.write("\r\n")
                    return line + "\n"
            chunk = await self.process.stdin.read(4096)
            if not chunk:
                line, self.pending = self.pending, ""
                return line
            self.process.stdout.write(chunk.replace("\r", "").replace("\n", ""))
            self.pending += chunk


def _console(process: asyncssh.SSHServerProcess[str]) -> tuple[Callable[[str], str], BarePtyInput | Any]:
    """How output line ends are written and where lines come from. With a PTY and a terminal
    type, asyncssh's line editor reads lines and turns "\n" into "\r\n" itself; a PTY without a
    terminal type gets Windows' bare console behaviour."""
    edited = bool(process.get_terminal_type())
    newline: Callable[[str], str] = (lambda text: text) if edited else to_crlf
    source = BarePtyInput(process) if process.get_terminal_type() == "" else process.stdin
    return newline, source


async def run_interactive(process: asyncssh.SSHServerProcess[str], session: Session,
                          commands: CommandTable) -> None:
    """A shell request: the default shell's prompt (cmd's ``C:\\...>`` or PowerShell's)."""
    if session.machine.ssh_default_shell() == "cmd":
        await _run_cmd_prompt(process, session, commands)
        return
    interpreter = Interpreter(session, commands)
    newline, source = _console(process)
    process.stdout.write(newline(BANNER.replace("\r\n", "\n")))
    buffer = ""
    while True:
        process.stdout.write(">> " if buffer else f"PS {session.location}> ")
        try:
            line = await source.readline()
        except asyncssh.TerminalSizeChanged:
            continue
        except (asyncssh.BreakReceived, asyncssh.SignalReceived):
            buffer = ""
            process.stdout.write("\r\n")
            continue
        except asyncssh.DisconnectError:
            return
        if not line:
            break
        buffer += line.rstrip("\r\n")
        if buffer.strip().lower() == "exit":
            break
        if len(buffer) < MAX_INTERACTIVE_BUFFER and _incomplete(buffer) and line.strip():
            buffer += "\n"
            continue
        result = await interpreter.run(buffer)
        buffer = ""
        process.stdout.write(newline(result.stdout))
        process.stderr.write(newline(result.stderr))
        if interpreter.exit_requested:
            process.exit(result.exit_code)
            return
    process.exit(0)


async def _run_cmd_prompt(process: asyncssh.SSHServerProcess[str], session: Session,
                          commands: CommandTable) -> None:
    interpreter = Interpreter(session, commands)
    newline, source = _console(process)
    process.stdout.write(newline(f"{VERSION_BANNER}\n(c) Microsoft Corporation. All rights reserved.\n\n"))
    code = 0
    while True:
        process.stdout.write(f"{session.location}>")
        try:
            line = await source.readline()
        except asyncssh.TerminalSizeChanged:
            continue
        except (asyncssh.BreakReceived, asyncssh.SignalReceived):
            process.stdout.write("^C\r\n")
            continue
        except asyncssh.DisconnectError:
            return
        if not line:
            break
        text = line.rstrip("\r\n")
        words = text.strip().split()
        if words and words[0].lower() == "exit":
            code = int(words[1]) if len(words) > 1 and words[1].lstrip("-").isdigit() else code
            break
        if text.strip():
            result = await run_line(interpreter, text, session=session)
            code = result.exit_code
            process.stdout.write(newline(result.stdout))
            process.stderr.write(newline(result.stderr))
        process.stdout.write(newline("\n"))
    process.exit(code)
