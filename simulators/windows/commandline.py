"""Windows command lines: how PowerShell 5.1 builds one for a program, how programs split it
(``CommandLineToArgvW``), and what ``powershell.exe`` and ``cmd.exe`` make of theirs."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field


def join_arguments(args: list[str]) -> str:
    """Windows PowerShell 5.1's native argument passing.

    An argument containing whitespace is wrapped in double quotes; embedded double quotes are
    passed unescaped and empty arguments are dropped — both long-standing 5.1 behaviours that
    break naive quoting.
    """
    parts = []
    for arg in args:
        if arg == "":
            continue
        if (" " in arg or "\t" in arg) and not (len(arg) > 1 and arg[0] == arg[-1] == '"'):
            parts.append(f'"{arg}"')
        else:
            parts.append(arg)
    return " ".join(parts)


def split_command_line(text: str) -> list[str]:
    """Split like ``CommandLineToArgvW`` (the rules of the Microsoft C runtime since 2008)."""
    if '"' not in text:  # no quoting at all: backslashes are literal, words end at blanks
        return [word for word in re.split(r"[ \t]+", text) if word]
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        buf: list[str] = []
        quoted = False
        while i < n:
            char = text[i]
            if char == "\\":
                j = i
                while j < n and text[j] == "\\":
                    j += 1
                count = j - i
                if j < n and text[j] == '"':
                    buf.append("\\" * (count // 2))
                    if count % 2:
                        buf.append('"')
                        i = j + 1
                    else:
                        i = j
                else:
                    buf.append("\\" * count)
                    i = j
            elif char == '"':
                if quoted and i + 1 < n and text[i + 1] == '"':
                    buf.append('"')
                    i += 2
                else:
                    quoted = not quoted
                    i += 1
            elif char in " \t" and not quoted:
                break
            else:
                buf.append(char)
                i += 1
        args.append("".join(buf))
    return args


class UsageError(ValueError):
    """powershell.exe or cmd.exe rejected its command line."""

    reason = "UsageError"


@dataclass
class PowerShellInvocation:
    command: str | None = None
    file: str | None = None
    file_args: list[str] = field(default_factory=list)
    read_stdin: bool = False
    options: dict[str, str | bool] = field(default_factory=dict)


_SWITCHES = ("NoLogo", "NoExit", "Sta", "Mta", "NoProfile", "NonInteractive")
_VALUED = ("PSConsoleFile", "Version", "InputFormat", "OutputFormat", "WindowStyle",
           "ConfigurationName", "ExecutionPolicy")
_SHORT = {"nop": "NoProfile", "noni": "NonInteractive", "enc": "EncodedCommand",
          "ec": "EncodedCommand", "e": "EncodedCommand", "ep": "ExecutionPolicy",
          "ex": "ExecutionPolicy", "c": "Command", "f": "File", "w": "WindowStyle",
          "nol": "NoLogo", "noe": "NoExit"}
_ALL = _SWITCHES + _VALUED + ("EncodedCommand", "File", "Command")


def _match(word: str) -> str | None:
    lowered = word.lower()
    if lowered in _SHORT:
        return _SHORT[lowered]
    matches = [name for name in _ALL if name.lower().startswith(lowered)]
    return matches[0] if len(matches) == 1 else None


def parse_powershell_arguments(args: list[str]) -> PowerShellInvocation:
    """Interpret ``powershell.exe``'s arguments like Windows PowerShell 5.1."""
    invocation = PowerShellInvocation()
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith(("-", "/")) or len(arg) < 2:
            invocation.command = " ".join(args[i:])
            return invocation
        name = _match(arg[1:])
        if name is None:
            invocation.command = " ".join(args[i:])  # 5.1 runs unknown text as the command
            return invocation
        if name in _SWITCHES:
            invocation.options[name] = True
            i += 1
            continue
        if i + 1 >= len(args):
            raise UsageError(f"Missing argument for parameter {arg}.")
        value = args[i + 1]
        if name == "Command":
            if value == "-":
                invocation.read_stdin = True
            else:
                invocation.command = " ".join(args[i + 1:])
            return invocation
        if name == "EncodedCommand":
            try:
                invocation.command = base64.b64decode(value, validate=True).decode("utf-16-le")
            except (binascii.Error, UnicodeDecodeError):
                raise UsageError("Cannot process the command because the value specified with "
                                 "-EncodedCommand is not properly encoded. The value must be "
                                 "Base64 encoded.") from None
            i += 2
            continue
        if name == "File":
            invocation.file = value
            invocation.file_args = args[i + 2:]
            return invocation
        invocation.options[name] = value
        i += 2
    return invocation


def cmd_command_text(args: list[str]) -> tuple[str | None, bool]:
    """The command ``cmd.exe`` runs (text after ``/c`` or ``/k``) and whether it was given.

    Quote handling follows ``cmd /?``: when the text starts with a quote, the first and the last
    quote characters are removed.
    """
    line = join_arguments(args)
    lowered = line.lower()
    for marker in ("/c", "/k", "/r"):
        index = lowered.find(marker)
        if index != -1 and (index == 0 or lowered[index - 1] in " \t") and (
                index + 2 >= len(line) or line[index + 2] in " \t\""):
            rest = line[index + 2:].lstrip(" \t")
            if rest.startswith('"') and rest.count('"') >= 2:
                last = rest.rfind('"')
                rest = rest[1:last] + rest[last + 1:]
            return rest, True
    return None, False
