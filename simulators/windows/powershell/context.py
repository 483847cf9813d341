"""What a cmdlet handler sees while the interpreter runs it (``CommandContext``), and the plain
results the interpreter hands to its callers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord
from proxyfleet.simulators.windows.powershell.values import PSObject, ScriptBlock

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.binding import CmdletSpec
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
    from proxyfleet.simulators.windows.session import Session


@dataclass
class RunResult:
    stdout: str
    stderr: str
    exit_code: int


class ReturnSignal(Exception):
    """``return``: unwinds to the enclosing script block or script."""


@dataclass
class NativeResult:
    stdout: str
    stderr: str
    exit_code: int


def error_record_object(record: ErrorRecord) -> PSObject:
    """``$_`` inside ``catch``: an ErrorRecord with its Exception."""
    exception = PSObject([f"System.{record.exception}", "System.Exception"],
                         {"Message": record.message}, string_form=record.message)
    return PSObject(
        ["System.Management.Automation.ErrorRecord"],
        {"Exception": exception, "FullyQualifiedErrorId": record.fully_qualified_error_id,
         "CategoryInfo": f"{record.category}: ({record.target}:{record.target_type}) "
                         f"[{record.command}], {record.exception}",
         "TargetObject": record.target or None},
        string_form=record.message)


class CommandContext:
    """What a cmdlet handler sees: its invocation, output, error stream and the session."""

    def __init__(self, interpreter: Interpreter, spec: CmdletSpec, invocation: str,
                 extent: ast.Extent, error_action: str | None) -> None:
        self.interpreter = interpreter
        self.spec = spec
        self.invocation = invocation
        self.extent = extent
        self.error_action = error_action
        self.output: list[Any] = []
        self.input: list[Any] = []
        self.piped = False  # whether a preceding pipeline element exists

    @property
    def session(self) -> Session:
        return self.interpreter.session

    def write(self, value: Any) -> None:
        self.output.append(value)

    def record(self, message: str, error_id: str, category: str, exception: str,
               target: str = "", target_type: str = "String") -> ErrorRecord:
        return ErrorRecord(message=message, error_id=error_id, category=category,
                           exception=exception, target=target, target_type=target_type,
                           command=self.invocation, command_type=self.spec.type_name,
                           extent=self.extent, script=self.interpreter.script)

    def error(self, message: str, error_id: str, category: str, exception: str,
              target: str = "", target_type: str = "String") -> None:
        """Write a non-terminating error."""
        self.interpreter.write_error(
            self.record(message, error_id, category, exception, target, target_type),
            self.error_action)

    def fail(self, message: str, error_id: str, category: str, exception: str,
             target: str = "", target_type: str = "String") -> NoReturn:
        """Raise a statement-terminating error."""
        raise CommandFailure(self.record(message, error_id, category, exception, target,
                                         target_type))

    def host_write(self, text: str) -> None:
        self.interpreter.host_write(text)

    async def invoke(self, block: ScriptBlock, item: Any) -> list[Any]:
        return await self.interpreter.invoke_scriptblock(block, item)
