"""``cmd.exe /c <line>``: what Windows' OpenSSH runs for an exec request when no ``DefaultShell``
is configured, and what ``cmd.exe /c`` does inside PowerShell.

The line is processed in cmd's own phases: ``%VAR%`` expansion over the whole line first
(an undefined variable stays as written, as with ``/c``), then ``^`` escapes, quotes and the
operators ``&``, ``&&``, ``||``, and redirections ``>``, ``>>``, ``2>``, ``2>&1``, ``<`` (``nul``
included). Built-ins: ``echo``, ``set``, ``ver``, ``type``, ``cd``, ``exit``; anything else runs as
a program from the node's disk or fails with cmd's ``is not recognized`` (errorlevel 9009).
Pipes and parenthesised blocks are refused loudly: the simulator does not model them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proxyfleet.simulators.windows.commandline import split_command_line
from proxyfleet.simulators.windows.filesystem import WindowsPathError

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.context import NativeResult
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
    from proxyfleet.simulators.windows.session import Session

MAX_LINE = 8191  # cmd.exe's own limit on the command lines it processes
BAD_NAME = "The filename, directory name, or volume label syntax is incorrect.\n"
VERSION_BANNER = "Microsoft Windows [Version 10.0.20348.2031]"
NOT_RECOGNIZED = 9009
_VARIABLE = re.compile(r"%([^%\r\n]+)%")


class CmdSyntaxError(ValueError):
    """A line cmd.exe itself rejects ("The syntax of the command is incorrect.")."""


@dataclass
class CmdCommand:
    """One command of a line: the operator before it, its words, its redirections."""

    operator: str  # "", "&", "&&", "||"
    text: str  # the command with redirections removed, carets resolved, quotes kept
    stdout: tuple[str, bool] | None = None  # (target, append)
    stderr: str | None = None  # a file, "nul", or "&1"
    stdin: str | None = None
    words: list[str] = field(default_factory=list)


def expand_variables(line: str, environment: dict[str, str]) -> str:
    """Phase 1: ``%NAME%`` from the environment (names case-insensitive); unknown ones stay."""
    folded = {k.lower(): v for k, v in environment.items()}
    return _VARIABLE.sub(lambda m: folded.get(m.group(1).lower(), m.group(0)), line)


_SPECIAL = re.compile(r'[\^"&|<>()]')


def parse_line(line: str) -> list[CmdCommand]:
    """Phase 2: split into commands and redirections, honouring quotes and ``^``."""
    if not _SPECIAL.search(line):  # one plain command (a powershell.exe -EncodedCommand line)
        text = line.strip()
        return [CmdCommand("", text, words=split_command_line(text))] if text else []
    commands: list[CmdCommand] = []
    current: list[str] = []
    operator = ""
    quoted = False
    redirects: list[tuple[str, str]] = []  # (kind, target)
    i = 0

    def read_target(start: int) -> tuple[str, int]:
        j = start
        while j < len(line) and line[j] in " \t":
            j += 1
        target: list[str] = []
        in_quotes = False
        while j < len(line):
            char = line[j]
            if char == '"':
                in_quotes = not in_quotes
            elif not in_quotes and char in " \t&|<>":
                break
            else:
                target.append(char)
            j += 1
        if not target:
            raise CmdSyntaxError("The syntax of the command is incorrect.")
        return "".join(target), j

    def finish() -> None:
        text = "".join(current).strip()
        if text or redirects:
            if not text:
                raise CmdSyntaxError("The syntax of the command is incorrect.")
            command = CmdCommand(operator, text)
            for kind, target in redirects:
                if kind in (">", ">>", "1>", "1>>"):
                    command.stdout = (target, kind.endswith(">>"))
                elif kind in ("2>", "2>>"):
                    command.stderr = target
                elif kind == "<":
                    command.stdin = target
            commands.append(command)
        elif operator:
            raise CmdSyntaxError(f"{operator} was unexpected at this time.")

    while i < len(line):
        char = line[i]
        if char == "^" and not quoted:
            if i + 1 < len(line):
                current.append(line[i + 1])
            i += 2
            continue
        if char == '"':
            quoted = not quoted
            current.append(char)
            i += 1
            continue
        if quoted:
            current.append(char)
            i += 1
            continue
        if char == "(" and not "".join(current).strip():
            raise CmdSyntaxError("The simulated cmd.exe does not support parenthesised blocks.")
        if char == "|" and line[i:i + 2] != "||":
            raise CmdSyntaxError("The simulated cmd.exe does not support pipes.")
        if char in "&|":
            double = line[i:i + 2] in ("&&", "||")
            if not "".join(current).strip() and not redirects:
                raise CmdSyntaxError(f"{line[i:i + 2] if double else char} was unexpected at this time.")
            finish()
            current, redirects = [], []
            operator = line[i:i + 2] if double else char
            i += 2 if double else 1
            continue
        if char in "<>":
            stream = ""
            if current and current[-1] in "12" and (len(current) == 1 or current[-2] in " \t"):
                stream = current.pop()
            kind = stream + (">>" if line[i:i + 2] == ">>" else char)
            i += len(kind) - len(stream)
            if kind == "2>" and line[i:i + 2] == "&1":
                redirects.append(("2>", "&1"))
                i += 2
                continue
            target, i = read_target(i)
            redirects.append((kind, target))
            continue
        current.append(char)
        i += 1
    if quoted:
        current.append('"')  # cmd tolerates a missing closing quote
    finish()
    for command in commands:
        command.words = split_command_line(command.text)
    return commands


def _first_word(text: str) -> tuple[str, str]:
    """The program word and the rest of the command text: cmd ends an unquoted first word at
    whitespace or at its other delimiters ``,`` ``;`` ``=``."""
    stripped = text.lstrip(" \t,;=")
    if stripped.startswith('"'):
        end = stripped.find('"', 1)
        end = len(stripped) if end == -1 else end
        return stripped[1:end], stripped[end + 1:]
    match = re.match(r"[^\s,;=]*", stripped)
    word = match.group(0) if match else ""
    return word, stripped[len(word):].lstrip(" \t")


async def run_line(interpreter: Interpreter, line: str, stdin: str | None = None,
                   session: Session | None = None) -> NativeResult:
    """Run one ``cmd.exe /c`` line in a child of ``interpreter``'s session (or, at an interactive
    prompt, in ``session`` itself, so ``set`` and ``cd`` last)."""
    from proxyfleet.simulators.windows.powershell.context import NativeResult

    if len(line) > MAX_LINE:
        return NativeResult("", "The command line is too long.\n", 1)
    session = session or _child(interpreter.session)
    try:
        commands = parse_line(expand_variables(line, session.environment.as_dict()))
    except CmdSyntaxError as exc:
        return NativeResult("", f"{exc}\n", 1)
    out: list[str] = []
    err: list[str] = []
    code = 0
    for command in commands:
        if (command.operator == "&&" and code != 0) or (command.operator == "||" and code == 0):
            continue
        try:
            stdout, stderr, code, exited = await _run_command(interpreter, session, command, stdin)
            problem = _redirect(session, command, stdout, stderr, out, err)
        except WindowsPathError:  # a name Windows itself rejects (a ":" or "*" in it, ...)
            stdout, stderr, code, exited = "", BAD_NAME, 1, False
            problem = None
            err.append(stderr)
        if problem:
            err.append(problem)
            code = 1
        if exited:
            break
    return NativeResult("".join(out), "".join(err), code)


def _redirect(session: Session, command: CmdCommand, stdout: str, stderr: str,
              out: list[str], err: list[str]) -> str | None:
    """Send a command's streams where its redirections say; returns cmd's error text, if any."""
    if command.stderr == "&1":
        stdout, stderr = stdout + stderr, ""
    targets = [(command.stdout, stdout, out), ((command.stderr, False) if command.stderr not in (None, "&1")
                                                 else None, stderr, err)]
    for target, text, stream in targets:
        if target is None:
            stream.append(text)
            continue
        name, append = target
        if name.lower() == "nul":
            continue
        path = session.resolve_file_path(name)
        data = text.replace("\r\n", "\n").replace("\n", "\r\n").encode("cp1252", errors="replace")
        fs = session.machine.filesystem
        try:
            if append and fs.exists(path):
                data = fs.read_bytes(path) + data
            fs.write_bytes(path, data)
        except PermissionError:
            return "Access is denied.\n"
        except OSError:
            return "The system cannot find the path specified.\n"
    return None


async def _run_command(interpreter: Interpreter, session: Session, command: CmdCommand,
                       stdin: str | None) -> tuple[str, str, int, bool]:
    """(stdout, stderr, errorlevel, whether the line ends here)."""
    from proxyfleet.simulators.windows.powershell.commands import NativeCommand
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter

    if command.stdin is not None:
        try:
            stdin = session.read_file(session.resolve_file_path(command.stdin)).decode("cp1252", "replace")
        except OSError:
            return "", "The system cannot find the file specified.\n", 1, False
    word, rest = _first_word(command.text)
    verb = word.lower()
    if verb in ("echo", "echo.") or verb.startswith("echo."):
        text = rest.lstrip(" ") if verb == "echo" else verb[5:] + rest
        return ((text if text.strip() else ("" if verb != "echo" else "ECHO is on.")) + "\n", "", 0, False)
    if verb == "set":
        out: list[str] = []
        code = _set(session, rest.strip(), out)
        return "".join(out), "", code, False
    if verb == "ver":
        return f"\n{VERSION_BANNER}\n", "", 0, False
    if verb in ("cd", "chdir"):
        if not rest.strip():
            return session.location + "\n", "", 0, False
        target = session.resolve_file_path(rest.strip().strip('"'))
        if not session.machine.filesystem.is_dir(target):
            return "", "The system cannot find the path specified.\n", 1, False
        session.location = target
        return "", "", 0, False
    if verb == "type":
        try:
            data = session.read_file(session.resolve_file_path(rest.strip().strip('"')))
            return data.decode("cp1252", errors="replace"), "", 0, False
        except PermissionError:
            return "", "Access is denied.\n", 1, False
        except OSError:
            return "", "The system cannot find the file specified.\n", 1, False
    if verb == "exit":
        words = rest.split()
        if words and words[0].lower() == "/b":
            words = words[1:]
        code = int(words[0]) if words and words[0].lstrip("-").isdigit() else 0
        return "", "", code, True
    program = interpreter.commands.resolve(word)
    if not isinstance(program, NativeCommand):
        return ("", f"'{word}' is not recognized as an internal or external command,\n"
                    "operable program or batch file.\n", NOT_RECOGNIZED, False)
    child = Interpreter(session, interpreter.commands, interpreter.budget)
    result = await program.handler(child, word, split_command_line(rest), stdin)
    return result.stdout, result.stderr, result.exit_code, False


def _set(session: Session, rest: str, out: list[str]) -> int:
    if "=" in rest:
        variable, _, value = rest.partition("=")
        if value:
            session.environment[variable] = value
        else:
            session.environment.pop(variable, None)
        return 0
    names = sorted(session.environment, key=str.lower)
    shown = [n for n in names if n.lower().startswith(rest.lower())] if rest else names
    if not shown:
        out.append(f"Environment variable {rest} not defined\n")
        return 1
    out.extend(f"{n}={session.environment[n]}\n" for n in shown)
    return 0


def _child(parent: Session) -> Session:
    from proxyfleet.simulators.windows.powershell.native import child_session

    return child_session(parent)
