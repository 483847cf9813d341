"""Programs on the simulated node's disk: ``hostname.exe``, ``whoami.exe``, ``cmd.exe`` and
``powershell.exe`` (a child PowerShell with the parent's environment)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proxyfleet.simulators.windows import egress
from proxyfleet.simulators.windows.cmdshell import VERSION_BANNER, run_line
from proxyfleet.simulators.windows.commandline import (
    UsageError,
    cmd_command_text,
    parse_powershell_arguments,
    split_command_line,
)
from proxyfleet.simulators.windows.powershell.commands import NativeCommand
from proxyfleet.simulators.windows.powershell.context import NativeResult
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.session import Session

SYSTEM32 = r"C:\Windows\System32"
POWERSHELL_DIR = r"C:\Windows\System32\WindowsPowerShell\v1.0"


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
    from proxyfleet.simulators.windows.session import Session

    child = Session(parent.machine, parent.username, parent.runtime, environment=parent.environment.copy(),
                    observer=parent.observer)
    child.location = parent.location
    return child


async def powershell(interpreter: Interpreter, name: str, args: list[str],
                     stdin: str | None) -> NativeResult:
    # The child sees the command line PowerShell 5.1 built, split by the C runtime.
    from proxyfleet.simulators.windows.commandline import join_arguments

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


async def cmd(interpreter: Interpreter, name: str, args: list[str],
              stdin: str | None) -> NativeResult:
    text, given = cmd_command_text(args)
    if not given or text is None:
        return NativeResult(f"{VERSION_BANNER}\n(c) Microsoft Corporation. All rights reserved.\n",
                            "The simulated cmd.exe runs only with /c.\n", 1)
    return await run_line(interpreter, text, stdin)


BUILTIN_PROGRAMS = (
    NativeCommand("curl.exe", SYSTEM32, egress.curl),
    NativeCommand("crictl.exe", r"C:\k", egress.crictl),
    NativeCommand("hostname.exe", SYSTEM32, hostname),
    NativeCommand("whoami.exe", SYSTEM32, whoami),
    NativeCommand("cmd.exe", SYSTEM32, cmd),
    NativeCommand("powershell.exe", POWERSHELL_DIR, powershell),
)
