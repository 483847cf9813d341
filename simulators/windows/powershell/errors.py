"""Error records and their rendering, in Windows PowerShell 5.1's own words and layout.

Three kinds of failure exist, as in PowerShell:

* ``ParseError``: nothing runs; reported as ``ParserError`` with the position.
* non-terminating errors: an :class:`ErrorRecord` is written to the error stream and the
  pipeline goes on (``$?`` becomes ``$false``);
* ``CommandFailure``: a statement-terminating error (unknown command, bad parameter, .NET
  exception); the statement stops, the script continues unless inside ``try`` or with
  ``$ErrorActionPreference = 'Stop'``;
* ``ScriptHalted``: ``throw`` or an error escalated by ``-ErrorAction Stop``; stops the script
  unless caught.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.simulators.windows.powershell.syntax import Extent


@dataclass
class ErrorRecord:
    """One PowerShell error record."""

    message: str
    error_id: str
    category: str
    exception: str
    target: str = ""
    target_type: str = ""
    command: str = ""  # the invocation name shown as "Get-Item : ..."
    command_type: str = ""  # appended to the FullyQualifiedErrorId
    extent: Extent | None = None
    script: str | None = None
    activity: str | None = None  # the [..] of CategoryInfo when it differs from `command`

    @property
    def fully_qualified_error_id(self) -> str:
        return f"{self.error_id},{self.command_type}" if self.command_type else self.error_id

    def located(self, extent: Extent | None, script: str | None) -> ErrorRecord:
        """Attach a position, unless one is already known."""
        if self.extent is None and extent is not None:
            self.extent = extent
            self.script = script
        return self


class PowerShellError(Exception):
    """Base of every failure raised while parsing or running PowerShell text."""

    reason = "PowerShellError"


@dataclass
class ParseProblem:
    message: str
    error_id: str
    extent: Extent


class ParseError(PowerShellError):
    """The script text is not valid in the supported subset; nothing runs."""

    reason = "ParserError"

    def __init__(self, problems: list[ParseProblem], script: str) -> None:
        super().__init__(problems[0].message)
        self.problems = problems
        self.script = script


class CommandFailure(PowerShellError):
    """A statement-terminating error."""

    reason = "CommandFailure"

    def __init__(self, record: ErrorRecord) -> None:
        super().__init__(record.message)
        self.record = record


class ScriptHalted(PowerShellError):
    """A script-terminating error (``throw``, ``-ErrorAction Stop``)."""

    reason = "ScriptHalted"

    def __init__(self, record: ErrorRecord) -> None:
        super().__init__(record.message)
        self.record = record


class ExitRequested(Exception):
    """``exit N``: not an error, unwinds to the host with an exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class ErrorSink:
    """Collects error records in the order they are written."""

    records: list[ErrorRecord] = field(default_factory=list)


def position(script: str, offset: int) -> tuple[int, int, str]:
    """Return (line number, column, line text) for an offset, 1-based like PowerShell."""
    offset = max(0, min(offset, len(script)))
    line_start = script.rfind("\n", 0, offset) + 1
    line_end = script.find("\n", offset)
    if line_end == -1:
        line_end = len(script)
    line_no = script.count("\n", 0, offset) + 1
    return line_no, offset - line_start + 1, script[line_start:line_end].rstrip("\r")


def _location_lines(script: str, extent: Extent) -> list[str]:
    line_no, column, text = position(script, extent.start)
    width = max(1, min(extent.end - extent.start, len(text) - column + 1))
    return [
        f"At line:{line_no} char:{column}",
        f"+ {text}",
        "+ " + " " * (column - 1) + "~" * width,
    ]


def format_error_record(record: ErrorRecord) -> str:
    """Render an error record like PowerShell 5.1's default error view (stderr text)."""
    lines = [f"{record.command} : {record.message}" if record.command else record.message]
    if record.extent is not None and record.script is not None:
        lines.extend(_location_lines(record.script, record.extent))
    activity = record.activity if record.activity is not None else record.command
    lines.append(
        f"    + CategoryInfo          : {record.category}: "
        f"({record.target}:{record.target_type}) [{activity}], {record.exception}"
    )
    lines.append(f"    + FullyQualifiedErrorId : {record.fully_qualified_error_id}")
    lines.append(" ")
    return "\n".join(lines) + "\n"


def format_parse_error(error: ParseError) -> str:
    """Render parse errors like PowerShell 5.1 does for ``-Command``."""
    lines: list[str] = []
    for problem in error.problems:
        lines.extend(_location_lines(error.script, problem.extent))
        lines.append(problem.message)
    lines.append("    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException")
    lines.append(f"    + FullyQualifiedErrorId : {error.problems[0].error_id}")
    lines.append(" ")
    return "\n".join(lines) + "\n"


def command_not_found(name: str) -> ErrorRecord:
    return ErrorRecord(
        message=(
            f"The term '{name}' is not recognized as the name of a cmdlet, function, script "
            "file, or operable program. Check the spelling of the name, or if a path was "
            "included, verify that the path is correct and try again."
        ),
        error_id="CommandNotFoundException",
        category="ObjectNotFound",
        exception="CommandNotFoundException",
        target=name,
        target_type="String",
        command=name,
        activity="",
    )


def runtime_exception(message: str, error_id: str, target: str = "", target_type: str = "") -> ErrorRecord:
    """An error raised by the language itself (no cmdlet), e.g. a failed method call."""
    return ErrorRecord(
        message=message,
        error_id=error_id,
        category="InvalidOperation",
        exception="RuntimeException",
        target=target,
        target_type=target_type,
    )
