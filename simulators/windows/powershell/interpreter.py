"""Runs parsed PowerShell against a :class:`~proxyfleet.simulators.windows.session.Session`.

Error semantics follow Windows PowerShell 5.1: non-terminating errors go to the error stream
and set ``$?``; statement-terminating errors stop one statement (the script goes on unless
inside ``try`` or ``$ErrorActionPreference = 'Stop'``); ``throw`` and escalated errors stop the
script. ``powershell -Command`` exits 1 when the last statement failed.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.binding import (
    CmdletSpec,
    bind_arguments,
    bind_pipeline_item,
    check_mandatory,
    pipeline_input_error,
)
from proxyfleet.simulators.windows.powershell.budgets import Budget
from proxyfleet.simulators.windows.powershell.context import (
    CommandContext,
    ReturnSignal,
    RunResult,
    error_record_object,
)
from proxyfleet.simulators.windows.powershell.dotnet import (
    DotNetError,
    TypeRef,
    convert_to,
    get_member,
    invoke_method,
    invoke_static,
    resolve_type,
    static_member,
)
from proxyfleet.simulators.windows.powershell.errors import (
    CommandFailure,
    ErrorRecord,
    ExitRequested,
    ParseError,
    ScriptHalted,
    command_not_found,
    format_error_record,
    format_parse_error,
)
from proxyfleet.simulators.windows.powershell.formatting import format_for_host
from proxyfleet.simulators.windows.powershell.operators import binary, unary
from proxyfleet.simulators.windows.powershell.parsing import parse
from proxyfleet.simulators.windows.powershell.values import (
    ConversionError,
    Hashtable,
    PSObject,
    ScriptBlock,
    collapse,
    enumerate_value,
    to_bool,
    to_number,
    to_string,
    type_name_of,
)

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.commands import CommandTable
    from proxyfleet.simulators.windows.session import Session

YIELD_EVERY = 500
# Python failures that must never escape a statement (see Interpreter._simulator_failure).
_PYTHON_FAILURES = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, OSError,
                    RecursionError, UnicodeError)
log = logging.getLogger(__name__)
ACTION_PREFERENCES = ("Continue", "Ignore", "Inquire", "SilentlyContinue", "Stop", "Suspend")
_READ_ONLY = {"true", "false", "?", "pid", "home", "psversiontable", "host", "pshome", "shellid"}


@dataclass
class _Redirect:
    discard: bool = False
    merge: bool = False
    captured: list[ErrorRecord] = field(default_factory=list)


class Interpreter:
    """One PowerShell runspace bound to a session."""

    def __init__(self, session: Session, commands: CommandTable | None = None,
                 budget: Budget | None = None) -> None:
        if commands is None:
            from proxyfleet.simulators.windows.powershell.commands import default_commands
            commands = default_commands()
        self.session = session
        self.commands = commands
        self.script = ""
        self.success = True
        self.previous_success = True
        self.last_exit_code: int | None = None
        self.errors: list[ErrorRecord] = []
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.try_depth = 0
        # A child powershell.exe spends its parent's allowance: one command, one budget.
        self.owns_budget = budget is None
        self.budget = budget or Budget()
        self.exit_requested = False
        self._redirects: list[_Redirect] = []
        self.variables: dict[str, Any] = {
            "erroractionpreference": "Continue",
            "progresspreference": "Continue",
            "verbosepreference": "SilentlyContinue",
            "warningpreference": "Continue",
            "confirmpreference": "High",
        }

    # --- entry points ------------------------------------------------------------------------

    async def run(self, text: str) -> RunResult:
        """Run script text as ``powershell.exe -Command`` does and collect its streams.

        May be called again on the same runspace (the interactive shell does): variables persist.
        """
        self.stdout.clear()
        self.stderr.clear()
        if self.owns_budget:
            self.budget.restart()
        try:
            block = parse(text)
        except ParseError as error:
            return RunResult("", format_parse_error(error), 1)
        except RecursionError:
            return RunResult("", "The script nests expressions more deeply than the simulated node's "
                                 "parser allows.\n", 1)
        self.script = text
        code = 0
        try:
            await self._top_level(block)
            code = 0 if self.success else 1
        except ExitRequested as request:
            code = request.code
            self.exit_requested = True
        except ScriptHalted as halted:
            self._report(halted.record)
            code = 1
        except ReturnSignal:
            code = 0 if self.success else 1
        return RunResult("".join(self.stdout), "".join(self.stderr), code)

    async def _top_level(self, block: ast.StatementBlock) -> None:
        for statement in block.statements:
            sink: list[Any] = []
            try:
                await self._statement_guarded(statement, sink)
            finally:
                if sink:
                    self.stdout.append(format_for_host(sink))

    # --- streams ------------------------------------------------------------------------------

    def host_write(self, text: str) -> None:
        self.stdout.append(text)

    def _report(self, record: ErrorRecord) -> None:
        for redirect in reversed(self._redirects):
            if redirect.discard:
                return
            if redirect.merge:
                redirect.captured.append(record)
                return
        self.stderr.append(format_error_record(record))

    def write_error(self, record: ErrorRecord, action: str | None) -> None:
        """A non-terminating error, handled per -ErrorAction / $ErrorActionPreference."""
        action = action or to_string(self.variables.get("erroractionpreference", "Continue"))
        self.success = False
        if action.lower() == "ignore":
            return
        self.errors.insert(0, record)
        if action.lower() == "stop":
            raise ScriptHalted(record)
        if action.lower() == "silentlycontinue":
            return
        self._report(record)

    def write_native_stderr(self, name: str, text: str) -> None:
        if not text:
            return
        for redirect in reversed(self._redirects):
            if redirect.discard:
                return
            if redirect.merge:
                for line in text.splitlines():
                    redirect.captured.append(ErrorRecord(
                        message=line, error_id="NativeCommandError", category="NotSpecified",
                        exception="RemoteException", target=line, command=name))
                return
        self.stderr.append(text if text.endswith("\n") else text + "\n")

    # --- statements --------------------------------------------------------------------------

    async def execute_block(self, block: ast.StatementBlock, sink: list[Any]) -> None:
        for statement in block.statements:
            await self._statement_guarded(statement, sink)

    async def _statement_guarded(self, statement: ast.Statement, sink: list[Any]) -> None:
        try:
            try:
                await self.execute_statement(statement, sink)
            except _PYTHON_FAILURES as exc:
                raise self._simulator_failure(exc, statement) from None
        except CommandFailure as failure:
            failure.record.located(statement.extent, self.script)
            self.success = False
            stop = to_string(self.variables.get("erroractionpreference")).lower() == "stop"
            if self.try_depth > 0:
                raise
            if stop:
                raise ScriptHalted(failure.record) from None
            self.errors.insert(0, failure.record)
            self._report(failure.record)

    def _simulator_failure(self, exc: BaseException, statement: ast.Statement) -> CommandFailure:
        """A Python failure inside the simulator, as a statement-terminating error: one odd
        command never takes the session (or the node) down. File system failures already carry
        .NET's words about the Windows path; anything else is named as a simulator limit."""
        if isinstance(exc, OSError):
            record = ErrorRecord(message=str(exc), error_id="System.IO.IOException", category="NotSpecified",
                                 exception="IOException")
        else:
            log.warning("the simulated PowerShell failed on a statement", exc_info=exc)
            record = ErrorRecord(
                message=f"The simulated node cannot run this statement: it asks for something the "
                        f"simulator does not model ({type(exc).__name__}).",
                error_id="SimulatorLimitation", category="NotImplemented", exception="NotSupportedException")
        return CommandFailure(record.located(statement.extent, self.script))

    async def execute_statement(self, statement: ast.Statement, sink: list[Any]) -> None:
        self.budget.step()
        if self.budget.used_steps % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # stay cooperative: one loop serves a whole fleet
        if isinstance(statement, ast.Pipeline):
            sink.extend(await self.run_pipeline(statement))
        elif isinstance(statement, ast.Assignment):
            await self.assign(statement)
        elif isinstance(statement, ast.IfStatement):
            for condition, body in statement.clauses:
                if to_bool(await self.statement_value(condition)):
                    await self.execute_block(body, sink)
                    return
            if statement.else_block is not None:
                await self.execute_block(statement.else_block, sink)
        elif isinstance(statement, ast.ForEachStatement):
            collection = await self.statement_value(statement.iterable)
            for item in [] if collection is None else enumerate_value(collection):
                self.variables[statement.variable.lower()] = item
                await self.execute_block(statement.body, sink)
        elif isinstance(statement, ast.TryStatement):
            await self._try(statement, sink)
        elif isinstance(statement, ast.FlowStatement):
            await self._flow(statement, sink)
        else:  # pragma: no cover - the parser produces nothing else
            raise TypeError(statement)

    async def _try(self, statement: ast.TryStatement, sink: list[Any]) -> None:
        self.try_depth += 1
        try:
            try:
                await self.execute_block(statement.body, sink)
            finally:
                self.try_depth -= 1
        except (CommandFailure, ScriptHalted) as failure:
            record = failure.record
            clause = next((c for c in statement.catches if _catches(c, record)), None)
            if clause is None:
                raise
            self.success = True
            saved = self.variables.get("_")
            self.variables["_"] = error_record_object(record)
            try:
                await self.execute_block(clause.body, sink)
            finally:
                self.variables["_"] = saved
        finally:
            if statement.finally_block is not None:
                await self.execute_block(statement.finally_block, sink)

    async def _flow(self, statement: ast.FlowStatement, sink: list[Any]) -> None:
        if statement.keyword == "exit":
            value = await self.statement_value(statement.value) if statement.value else 0
            try:
                code = int(to_number(value))
            except ConversionError:
                code = 0
            raise ExitRequested(code)
        if statement.keyword == "return":
            if statement.value is not None:
                await self.execute_statement(statement.value, sink)
            raise ReturnSignal()
        value = await self.statement_value(statement.value) if statement.value else None
        if isinstance(value, PSObject) and value.type_name.endswith("ErrorRecord"):
            message = to_string(value)
        else:
            message = to_string(value) if value is not None else "ScriptHalted"
        raise ScriptHalted(ErrorRecord(
            message=message, error_id=message, category="OperationStopped",
            exception="RuntimeException", target=message if value is not None else "",
            target_type="String" if value is not None else "", extent=statement.extent,
            script=self.script))

    async def statement_value(self, statement: ast.Statement) -> Any:
        """The value of a statement used as an expression (assignment right-hand side, conditions)."""
        if (isinstance(statement, ast.Pipeline) and len(statement.elements) == 1
                and isinstance(statement.elements[0], ast.CommandExpression)
                and not statement.elements[0].redirections):
            expression = statement.elements[0].expression
            if isinstance(expression, ast.Convert) and expression.type_name.lower() in (
                    "void", "system.void"):
                await self.evaluate(expression.operand)
                return None
            return await self.evaluate(expression)
        sink: list[Any] = []
        await self.execute_statement(statement, sink)
        return collapse(sink)

    # --- assignment -------------------------------------------------------------------------

    async def assign(self, statement: ast.Assignment) -> None:
        value = await self.statement_value(statement.value)
        target = statement.target
        if statement.operator != "=":
            current = await self.evaluate(target)
            value, _ = binary(statement.operator[0], current, value)
        if isinstance(target, ast.Convert):
            value = self._convert(target.type_name, value, target.extent)
            target = target.operand
        if isinstance(target, ast.Variable):
            self.set_variable(target.name, target.scope, value, target.extent)
        elif isinstance(target, ast.Member):
            owner = await self.evaluate(target.target)
            name = to_string(await self.evaluate(target.member))
            if isinstance(owner, Hashtable):
                owner[name] = value
            elif isinstance(owner, PSObject) and owner.has(name):
                owner.set(name, value)
            else:
                raise CommandFailure(ErrorRecord(
                    message=f"The property '{name}' cannot be found on this object. Verify that "
                            "the property exists and can be set.", error_id="PropertyNotFound",
                    category="InvalidOperation", exception="RuntimeException"))
        elif isinstance(target, ast.Index):
            owner = await self.evaluate(target.target)
            index = await self.evaluate(target.index)
            if isinstance(owner, Hashtable):
                owner[index] = value
            elif isinstance(owner, list):
                position = int(to_number(index))
                if not -len(owner) <= position < len(owner):
                    raise CommandFailure(ErrorRecord(
                        message="Index was outside the bounds of the array.",
                        error_id="IndexOutOfRange", category="InvalidOperation",
                        exception="RuntimeException"))
                owner[position] = value
            else:
                raise CommandFailure(ErrorRecord(
                    message=f"Unable to index into an object of type {type_name_of(owner)}.",
                    error_id="CannotIndex", category="InvalidOperation",
                    exception="RuntimeException"))

    def get_variable(self, name: str, scope: str) -> Any:
        lowered = name.lower()
        if scope == "env":
            return self.session.environment.get(name)
        if lowered == "null":
            return None
        if lowered == "true":
            return True
        if lowered == "false":
            return False
        if lowered == "?":
            return self.previous_success
        if lowered == "lastexitcode":
            return self.last_exit_code
        if lowered == "error":
            return [error_record_object(record) for record in self.errors]
        if lowered == "psitem":
            lowered = "_"
        if lowered == "pwd":
            return PSObject(["System.Management.Automation.PathInfo"],
                            {"Path": self.session.location}, string_form=self.session.location)
        if lowered == "home":
            return self.session.home
        if lowered == "pid":
            return self.session.pid
        if lowered == "pshome":
            return r"C:\Windows\System32\WindowsPowerShell\v1.0"
        if lowered == "psversiontable":
            version = PSObject(["System.Version"], {"Major": 5, "Minor": 1, "Build": 20348,
                                                    "Revision": 2031}, string_form="5.1.20348.2031")
            return Hashtable([("PSVersion", version), ("PSEdition", "Desktop"),
                              ("BuildVersion", "10.0.20348.2031"), ("CLRVersion", "4.0.30319.42000"),
                              ("WSManStackVersion", "3.0"), ("PSRemotingProtocolVersion", "2.3"),
                              ("SerializationVersion", "1.1.0.1")])
        if lowered == "args":
            return []
        return self.variables.get(lowered)

    def set_variable(self, name: str, scope: str, value: Any, extent: ast.Extent | None = None) -> None:
        lowered = name.lower()
        if scope == "env":
            if value is None or to_string(value) == "":
                self.session.environment.pop(name, None)
            else:
                self.session.environment[name] = to_string(value)
            return
        if lowered == "null":
            return
        if lowered in _READ_ONLY:
            raise CommandFailure(ErrorRecord(
                message=f"Cannot overwrite variable {name} because it is read-only or constant.",
                error_id="VariableNotWritable", category="WriteError",
                exception="SessionStateUnauthorizedAccessException", target=name,
                target_type="String", extent=extent, script=self.script))
        if lowered == "erroractionpreference":
            text = to_string(value)
            choice = next((c for c in ACTION_PREFERENCES if c.lower() == text.lower()), None)
            if choice is None:
                raise CommandFailure(ErrorRecord(
                    message=f'Cannot convert value "{text}" to type '
                            '"System.Management.Automation.ActionPreference". Error: "Unable to '
                            f"match the identifier name {text} to a valid enumerator name. Specify "
                            "one of the following enumerator names and try again:\n"
                            f'{", ".join(ACTION_PREFERENCES)}"',
                    error_id="RuntimeException", category="MetadataError",
                    exception="ArgumentTransformationMetadataException", extent=extent,
                    script=self.script))
            value = choice
        if lowered == "lastexitcode":
            self.last_exit_code = value
            return
        if lowered == "psitem":
            lowered = "_"
        self.variables[lowered] = value

    # --- pipelines ----------------------------------------------------------------------------

    async def run_pipeline(self, pipeline: ast.Pipeline) -> list[Any]:
        items: list[Any] | None = None
        for element in pipeline.elements:
            items = await self._run_element(element, items)
        return items or []

    async def _run_element(self, element: ast.Command | ast.CommandExpression,
                           items: list[Any] | None) -> list[Any]:
        if not element.redirections:
            return await self._run_element_core(element, items)
        redirect = _Redirect()
        output_target: tuple[str, bool] | None = None
        discard_output = False
        for redirection in element.redirections:
            target = None if redirection.target is None else await self.evaluate(redirection.target)
            is_null = redirection.target is not None and target is None
            if redirection.stream in ("2", "*"):
                if redirection.target is None:
                    redirect.merge = True
                elif is_null:
                    redirect.discard = True
                else:
                    raise CommandFailure(ErrorRecord(
                        message="Redirecting the error stream to a file is not supported by the "
                                "simulated node.", error_id="RedirectionNotSupported",
                        category="NotImplemented", exception="NotSupportedException",
                        extent=redirection.extent, script=self.script))
            if redirection.stream in ("1", "*") and redirection.target is not None:
                if is_null:
                    discard_output = True
                else:
                    output_target = (to_string(target), redirection.append)
        self._redirects.append(redirect)
        try:
            output = await self._run_element_core(element, items)
        finally:
            self._redirects.remove(redirect)
        if redirect.merge:
            output = output + [error_record_object(r) for r in redirect.captured]
        if discard_output:
            return []
        if output_target is not None:
            self._redirect_to_file(output_target[0], format_for_host(output), output_target[1], element.extent)
            return []
        return output

    def _redirect_to_file(self, path: str, text: str, append: bool, extent: ast.Extent) -> None:
        """``> file``: Out-File's work, and Out-File's errors (the statement stops)."""
        from proxyfleet.simulators.windows.powershell.cmdlets.content import out_file
        from proxyfleet.simulators.windows.powershell.providers import PathProblem

        command = "Microsoft.PowerShell.Commands.OutFileCommand"
        try:
            out_file(self, path, text, "unicode", append)
        except PathProblem as problem:
            record = ErrorRecord(message=str(problem), error_id=problem.error_id, category=problem.category,
                                 exception=problem.exception, target=path, target_type="String",
                                 command="out-file", command_type=command)
            raise CommandFailure(record.located(extent, self.script)) from None
        except OSError as exc:
            denied = isinstance(exc, PermissionError)
            record = ErrorRecord(message=str(exc), error_id="FileOpenFailure", category="OpenError",
                                 exception="UnauthorizedAccessException" if denied else "IOException",
                                 command="out-file", command_type=command)
            raise CommandFailure(record.located(extent, self.script)) from None

    async def _run_element_core(self, element: ast.Command | ast.CommandExpression,
                                items: list[Any] | None) -> list[Any]:
        # $? inside this element still means "did the previous one succeed".
        self.previous_success = self.success
        self.success = True
        if isinstance(element, ast.CommandExpression):
            expression = element.expression
            if isinstance(expression, ast.Convert) and expression.type_name.lower() in (
                    "void", "system.void"):
                await self.evaluate(expression.operand)
                return []
            value = await self.evaluate(expression)
            if isinstance(expression, ast.ParenExpression | ast.SubExpression | ast.ArrayExpression) \
                    or not isinstance(value, Hashtable | PSObject):
                return enumerate_value(value)
            return [value]
        return await self.run_command(element, items)

    async def _command_arguments(self, command: ast.Command) -> list[tuple[str | None, Any, bool]]:
        arguments: list[tuple[str | None, Any, bool]] = []
        for element in command.elements:
            if isinstance(element, ast.CommandParameter):
                if element.argument is not None:
                    arguments.append((element.name, await self.evaluate(element.argument), True))
                else:
                    arguments.append((element.name, None, False))
            else:
                arguments.append((None, await self.evaluate(element), True))
        return arguments

    async def _native_arguments(self, command: ast.Command) -> list[str]:
        arguments: list[str] = []
        for element in command.elements:
            if isinstance(element, ast.CommandParameter):
                if element.argument is None:
                    arguments.append(element.text)
                else:
                    value = await self.evaluate(element.argument)
                    arguments.append(f"-{element.name}:{to_string(value)}")
            else:
                value = await self.evaluate(element)
                arguments.extend(to_string(v) for v in enumerate_value(value))
        return arguments

    async def run_command(self, command: ast.Command, items: list[Any] | None) -> list[Any]:
        name_value = await self.evaluate(command.name)
        if isinstance(name_value, ScriptBlock):
            if command.elements:
                raise CommandFailure(ErrorRecord(
                    message="Passing arguments to script blocks is not supported by the simulated "
                            "node.", error_id="ScriptBlockArgumentsNotSupported",
                    category="NotImplemented", exception="NotSupportedException"))
            return await self.invoke_scriptblock(name_value, items[0] if items else None)
        name = to_string(name_value)
        resolved = self.commands.resolve(name)
        if resolved is None:
            raise CommandFailure(command_not_found(name).located(command.name.extent, self.script))
        if isinstance(resolved, CmdletSpec):
            return await self.run_cmdlet(resolved, name, command, items)
        arguments = await self._native_arguments(command)
        stdin = None if items is None else "".join(to_string(i) + "\n" for i in items)
        result = await resolved.handler(self, name, arguments, stdin)
        self.last_exit_code = result.exit_code
        self.write_native_stderr(name, result.stderr)
        self.success = result.exit_code == 0
        text = result.stdout.replace("\r\n", "\n")
        if not text:
            return []
        return text.removesuffix("\n").split("\n")

    async def run_cmdlet(self, spec: CmdletSpec, invocation: str, command: ast.Command,
                         items: list[Any] | None) -> list[Any]:
        try:
            call = bind_arguments(spec, invocation, await self._command_arguments(command))
        except CommandFailure as failure:
            failure.record.located(command.extent, self.script)
            raise
        action = call.named.get("ErrorAction")
        if action is not None:
            action = next(c for c in ACTION_PREFERENCES if c.lower() == action.lower())
        context = CommandContext(self, spec, invocation, command.extent, action)
        try:
            if items is None or spec.collects_input:
                named = dict(call.named)
                context.input = items or []
                context.piped = items is not None
                if not (spec.collects_input and items):
                    check_mandatory(spec, invocation, named)
                await spec.handler(context, named)
            else:
                for item in items:
                    bound = bind_pipeline_item(spec, invocation, call, item)
                    if bound is None:
                        record = pipeline_input_error(spec, invocation, item)
                        self.write_error(record.located(command.extent, self.script), action)
                        continue
                    check_mandatory(spec, invocation, bound)
                    await spec.handler(context, bound)
        except CommandFailure as failure:
            failure.record.located(command.extent, self.script)
            if not failure.record.command:
                failure.record.command = invocation
            raise
        if context.output and call.named.get("OutVariable"):
            self.variables[call.named["OutVariable"].lower()] = collapse(list(context.output))
        return context.output

    async def invoke_scriptblock(self, block: ScriptBlock, item: Any = None) -> list[Any]:
        saved = self.variables.get("_")
        self.variables["_"] = item
        sink: list[Any] = []
        try:
            await self.execute_block(block.body, sink)
        except ReturnSignal:
            pass
        finally:
            self.variables["_"] = saved
        return sink

    # --- expressions --------------------------------------------------------------------------

    def _convert(self, type_name: str, value: Any, extent: ast.Extent) -> Any:
        try:
            return convert_to(type_name, value)
        except ConversionError as exc:
            raise CommandFailure(ErrorRecord(
                message=str(exc), error_id="InvalidCastParseTargetInvocation",
                category="InvalidArgument", exception="RuntimeException", extent=extent,
                script=self.script)) from None

    async def evaluate(self, expr: ast.Expr) -> Any:
        if isinstance(expr, ast.StringConstant):
            return expr.value
        if isinstance(expr, ast.NumberConstant):
            return expr.value
        if isinstance(expr, ast.Variable):
            return self.get_variable(expr.name, expr.scope)
        if isinstance(expr, ast.ExpandableString):
            parts = []
            for part in expr.parts:
                parts.append(part if isinstance(part, str) else to_string(await self.evaluate(part)))
            return "".join(parts)
        if isinstance(expr, ast.ArrayLiteral):
            return [await self.evaluate(element) for element in expr.elements]
        if isinstance(expr, ast.ArrayExpression):
            sink: list[Any] = []
            await self.execute_block(expr.body, sink)
            return sink
        if isinstance(expr, ast.SubExpression):
            sink = []
            await self.execute_block(expr.body, sink)
            return collapse(sink)
        if isinstance(expr, ast.ParenExpression):
            if isinstance(expr.pipeline, ast.Assignment):
                await self.assign(expr.pipeline)
                return await self.evaluate(expr.pipeline.target)
            return await self.statement_value(expr.pipeline)
        if isinstance(expr, ast.HashtableLiteral):
            table = Hashtable(ordered=expr.ordered)
            for key_expr, value_statement in expr.pairs:
                table[await self.evaluate(key_expr)] = await self.statement_value(value_statement)
            return table
        if isinstance(expr, ast.ScriptBlockLiteral):
            return ScriptBlock(expr.body, expr.text)
        if isinstance(expr, ast.TypeLiteral):
            return TypeRef(self._resolve_type(expr.type_name, expr.extent))
        if isinstance(expr, ast.Convert):
            if expr.type_name.lower() == "ordered":
                raise CommandFailure(ErrorRecord(
                    message="The ordered attribute can be specified only on a hash literal node.",
                    error_id="OrderedAttributeOnlyOnHashLiteralNode", category="ParserError",
                    exception="ParseException", extent=expr.extent, script=self.script))
            return self._convert(expr.type_name, await self.evaluate(expr.operand), expr.extent)
        if isinstance(expr, ast.Member):
            return await self._member(expr)
        if isinstance(expr, ast.InvokeMember):
            return await self._invoke_member(expr)
        if isinstance(expr, ast.Index):
            return self._index(await self.evaluate(expr.target), await self.evaluate(expr.index))
        if isinstance(expr, ast.Unary):
            operand = await self.evaluate(expr.operand)
            return self._operate(expr.extent, unary, expr.operator, operand)
        if isinstance(expr, ast.Binary):
            return await self._binary(expr)
        raise TypeError(expr)  # pragma: no cover

    def _operate(self, extent: ast.Extent, operator: Callable[..., Any], *args: Any) -> Any:
        """Apply an operator; a value it cannot convert fails the statement as in 5.1
        (``'a' * 'b'``: the right operand must become an Int32)."""
        try:
            return operator(*args)
        except ConversionError as exc:
            raise CommandFailure(ErrorRecord(
                message=str(exc), error_id="InvalidCastFromStringToInteger", category="InvalidArgument",
                exception="RuntimeException", extent=extent, script=self.script)) from None

    def _resolve_type(self, name: str, extent: ast.Extent) -> str:
        try:
            return resolve_type(name)
        except CommandFailure as failure:
            failure.record.located(extent, self.script)
            raise

    async def _binary(self, expr: ast.Binary) -> Any:
        left = await self.evaluate(expr.left)
        if expr.operator == "-and":
            return to_bool(left) and to_bool(await self.evaluate(expr.right))
        if expr.operator == "-or":
            return to_bool(left) or to_bool(await self.evaluate(expr.right))
        right = await self.evaluate(expr.right)
        value, matches = self._operate(expr.extent, binary, expr.operator, left, right)
        if matches is not None:
            self.variables["matches"] = matches
        return value

    async def _member(self, expr: ast.Member) -> Any:
        target = await self.evaluate(expr.target)
        name = to_string(await self.evaluate(expr.member))
        if isinstance(target, TypeRef):
            if not expr.static:
                return get_member(target, name)
            return static_member(self.session, target.full_name, name)
        return get_member(target, name)

    async def _invoke_member(self, expr: ast.InvokeMember) -> Any:
        target = await self.evaluate(expr.target)
        name = to_string(await self.evaluate(expr.member))
        arguments = [await self.evaluate(argument) for argument in expr.arguments]
        try:
            if isinstance(target, TypeRef) and expr.static:
                return invoke_static(self.session, target.full_name, name, arguments)
            if isinstance(target, ScriptBlock) and name.lower() in ("invoke", "invokereturnasis"):
                return collapse(await self.invoke_scriptblock(target))
            result = invoke_method(target, name, arguments)
            if inspect.isawaitable(result):  # a member that blocks in .NET (WaitForStatus) waits here
                result = await result
            return result
        except (DotNetError, ConversionError, ValueError, OSError) as exc:
            exception = exc.exception if isinstance(exc, DotNetError) else "ArgumentException"
            raise CommandFailure(ErrorRecord(
                message=f'Exception calling "{name}" with "{len(arguments)}" argument(s): '
                        f'"{exc}"', error_id=exception, category="NotSpecified",
                exception="MethodInvocationException", extent=expr.extent,
                script=self.script)) from None
        except CommandFailure as failure:
            failure.record.located(expr.extent, self.script)
            raise

    def _index(self, target: Any, index: Any) -> Any:
        if target is None:
            raise CommandFailure(ErrorRecord(
                message="Cannot index into a null array.", error_id="NullArray",
                category="InvalidOperation", exception="RuntimeException"))
        if isinstance(index, list):
            return [self._index(target, i) for i in index]
        if isinstance(target, Hashtable):
            return target.get(index)
        if isinstance(target, PSObject):
            return target.get(to_string(index)) if isinstance(index, str) else None
        if isinstance(target, list | bytes | str):
            try:
                position = int(to_number(index))
            except ConversionError:
                return None
            if -len(target) <= position < len(target):
                return target[position]
            return None
        try:
            return target if int(to_number(index)) == 0 else None
        except ConversionError:
            return None


def _catches(clause: ast.CatchClause, record: ErrorRecord) -> bool:
    if not clause.type_names:
        return True
    for name in clause.type_names:
        short = name.rsplit(".", 1)[-1].lower()
        if short in ("exception", "systemexception", "runtimeexception") or \
                short == record.exception.lower():
            return True
        if short == "actionpreferencestopexception":
            return True
    return False
