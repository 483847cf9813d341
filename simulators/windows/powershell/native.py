"""Programs on the simulated node's disk: ``hostname.exe``, ``whoami.exe``, ``cmd.exe`` and
``powershell.exe`` (a child PowerShell with the parent's environment)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from simulators.windows import egress
from simulators.windows.commandline import (
    UsageError,
    cmd_command_text,
    parse_powershell_arguments,
    split_cmd_commands,
    split_command_line,
)
from simulators.windows.powershell.commands import NativeCommand
from simulators.windows.powershell.interpreter import Interpreter, NativeResult

if TYPE_CHECKING:
    from simulators.windows.session import Session

SYSTEM32 = r"C:\Windows\System32"
POWERSHELL_DIR = r"C:\Windows\System32\WindowsPowerShell\v1.0"
VERSION_BANNER = "Microsoft Windows [Version 10.0.20348.2031]"


async def hostname(interpreter: Interpreter, name: str, args: list[str],
                   stdin: str | None) -> NativeResult:
    return NativeResult(interpreter.session.machine.settings.hostname.upper() + "\n", "", 0)


async def whoami(interpreter: Interpreter, name: str, args: list[str],
                 stdin: str | None) -> NativeResult:
    if args:
        return NativeResult("", f"ERROR: Invalid argument/option - '{args[0]}'.\n"
                                "Type \"WHOAMI /?\" for usage.\n", 1)
    session = interpreter.session
    return NativeResult(f"{session.machine.settings.hostname.lower()}\\{session.username.lower()}\n",
                        "", 0)


def child_session(parent: Session) -> Session:
    """A child process: same user, a copy of the parent's process environment."""
    from simulators.windows.session import Session

    child = Session(parent.machine, parent.username, parent.runtime)
    child.environment = parent.environment.copy()
    child.location = parent.location
    return child


async def powershell(interpreter: Interpreter, name: str, args: list[str],
                     stdin: str | None) -> NativeResult:
    # The child sees the command line PowerShell 5.1 built, split by the C runtime.
    from simulators.windows.commandline import join_arguments

    argv = split_command_line(join_arguments(args))
    try:
        invocation = parse_powershell_arguments(argv)
    except UsageError as exc:
        return NativeResult("", f"{exc}\n", 1)
    session = child_session(interpreter.session)
    child = Interpreter(session, interpreter.commands, interpreter.budget)
    if invocation.file is not None:
        path = session.resolve_file_path(invocation.file)
        try:
            script = session.read_file(path).decode("utf-8-sig", errors="replace")
        except OSError:  # missing, or a directory
            return NativeResult("", f"The argument '{invocation.file}' to the -File parameter "
                                    "does not exist. Provide the path to an existing '.ps1' file "
                                    "as an argument to the -File parameter.\n", 4294770688)
    elif invocation.read_stdin:
        script = stdin or ""
    elif invocation.command is not None:
        script = invocation.command
    else:
        return NativeResult("", "The simulated node does not run an interactive powershell.exe "
                                "inside another command; use -Command.\n", 1)
    result = await child.run(script)
    return NativeResult(result.stdout, result.stderr, result.exit_code)


_VARIABLE = re.compile(r"%([^%\s]+)%")


async def cmd(interpreter: Interpreter, name: str, args: list[str],
              stdin: str | None) -> NativeResult:
    text, given = cmd_command_text(args)
    if not given or text is None:
        return NativeResult(f"{VERSION_BANNER}\n(c) Microsoft Corporation. All rights reserved.\n",
                            "The simulated cmd.exe runs only with /c.\n", 1)
    session = child_session(interpreter.session)
    out: list[str] = []
    err: list[str] = []
    code = 0
    for operator, command in split_cmd_commands(text):
        if operator == "|":
            err.append("The simulated cmd.exe does not support pipes.\n")
            return NativeResult("".join(out), "".join(err), 1)
        if (operator == "&&" and code != 0) or (operator == "||" and code == 0):
            continue
        expanded = _VARIABLE.sub(lambda m: session.environment.get(m.group(1), m.group(0)), command)
        word, _, rest = expanded.partition(" ")
        verb = word.strip('"').lower()
        if verb in ("echo", "echo."):
            out.append((rest if rest else ("" if verb == "echo." else "ECHO is on.")) + "\n")
            code = 0
        elif verb == "set":
            code = _cmd_set(session, rest.strip(), out)
        elif verb == "ver":
            out.append(f"\n{VERSION_BANNER}\n")
            code = 0
        elif verb == "type":
            path = session.resolve_file_path(rest.strip().strip('"'))
            try:
                out.append(session.read_file(path).decode("cp1252", errors="replace"))
                code = 0
            except PermissionError:
                err.append("Access is denied.\n")
                code = 1
            except OSError:
                err.append("The system cannot find the file specified.\n")
                code = 1
        elif verb == "exit":
            words = rest.split()
            if words and words[0].lower() == "/b":
                words = words[1:]
            return NativeResult("".join(out), "".join(err), int(words[0]) if words and
                                words[0].lstrip("-").isdigit() else code)
        else:
            program = interpreter.commands.resolve(word.strip('"'))
            if not isinstance(program, NativeCommand):
                err.append(f"'{word.strip(chr(34))}' is not recognized as an internal or external "
                           "command,\noperable program or batch file.\n")
                code = 9009
                continue
            child = Interpreter(session, interpreter.commands, interpreter.budget)
            result = await program.handler(child, word, split_command_line(rest), None)
            out.append(result.stdout)
            err.append(result.stderr)
            code = result.exit_code
    return NativeResult("".join(out), "".join(err), code)


def _cmd_set(session: Session, rest: str, out: list[str]) -> int:
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


BUILTIN_PROGRAMS = (
    NativeCommand("curl.exe", SYSTEM32, egress.curl),
    NativeCommand("crictl.exe", r"C:\k", egress.crictl),
    NativeCommand("hostname.exe", SYSTEM32, hostname),
    NativeCommand("whoami.exe", SYSTEM32, whoami),
    NativeCommand("cmd.exe", SYSTEM32, cmd),
    NativeCommand("powershell.exe", POWERSHELL_DIR, powershell),
)
