"""Cmdlet declarations and PowerShell's parameter binding rules.

Named parameters match by full name, alias or unique prefix; positional arguments fill the
remaining positional parameters in order; pipeline input binds by value or by property name.
Every failure uses the wording and error id of PowerShell's ``ParameterBindingException``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord
from proxyfleet.simulators.windows.powershell.values import (
    ConversionError,
    Hashtable,
    PSObject,
    ScriptBlock,
    to_bool,
    to_number,
    to_string,
    type_name_of,
)

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.context import CommandContext

Handler = Callable[["CommandContext", dict[str, Any]], Awaitable[None]]

KIND_TYPES = {
    "switch": "System.Management.Automation.SwitchParameter",
    "string": "System.String",
    "string[]": "System.String[]",
    "int": "System.Int32",
    "bool": "System.Boolean",
    "object": "System.Object",
    "object[]": "System.Object[]",
    "scriptblock": "System.Management.Automation.ScriptBlock",
    "hashtable": "System.Collections.Hashtable",
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: str = "string"
    position: int | None = None
    mandatory: bool = False
    aliases: tuple[str, ...] = ()
    by_value: bool = False
    by_property: bool = False
    choices: tuple[str, ...] = ()
    remaining: bool = False  # ValueFromRemainingArguments


@dataclass(frozen=True)
class CmdletSpec:
    name: str
    type_name: str
    handler: Handler
    params: tuple[Param, ...] = ()
    should_process: bool = False
    collects_input: bool = False  # the handler sees all pipeline input at once
    param_sets: tuple[frozenset[str], ...] = field(default=())


COMMON_PARAMS = (
    Param("ErrorAction", "string", aliases=("ea",),
          choices=("Continue", "Ignore", "Inquire", "SilentlyContinue", "Stop", "Suspend")),
    Param("WarningAction", "string", aliases=("wa",),
          choices=("Continue", "Ignore", "Inquire", "SilentlyContinue", "Stop", "Suspend")),
    Param("ErrorVariable", "string", aliases=("ev",)),
    Param("OutVariable", "string", aliases=("ov",)),
    Param("Verbose", "switch", aliases=("vb",)),
    Param("Debug", "switch", aliases=("db",)),
)
SHOULD_PROCESS_PARAMS = (
    Param("WhatIf", "switch", aliases=("wi",)),
    Param("Confirm", "switch", aliases=("cf",)),
)


def binding_error(spec: CmdletSpec, invocation: str, message: str, error_id: str,
                  category: str = "InvalidArgument", target: str = "",
                  target_type: str = "") -> CommandFailure:
    return CommandFailure(ErrorRecord(
        message=message, error_id=error_id, category=category,
        exception="ParameterBindingException", target=target, target_type=target_type,
        command=invocation, command_type=spec.type_name))


def all_params(spec: CmdletSpec) -> tuple[Param, ...]:
    extra = SHOULD_PROCESS_PARAMS if spec.should_process else ()
    return spec.params + COMMON_PARAMS + extra


def find_param(spec: CmdletSpec, invocation: str, given: str) -> Param:
    """Resolve ``-given`` to a parameter by name, alias or unambiguous prefix."""
    lowered = given.lower()
    candidates = all_params(spec)
    for param in candidates:
        if param.name.lower() == lowered or lowered in (a.lower() for a in param.aliases):
            return param
    matches = [p for p in candidates if p.name.lower().startswith(lowered)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = " ".join("-" + p.name for p in matches)
        raise binding_error(
            spec, invocation,
            f"Parameter cannot be processed because the parameter name '{given}' is ambiguous. "
            f"Possible matches include: {names}.", "AmbiguousParameter", target=given,
            target_type="String")
    raise binding_error(
        spec, invocation, f"A parameter cannot be found that matches parameter name '{given}'.",
        "NamedParameterNotFound", target=given, target_type="String")


def convert_argument(spec: CmdletSpec, invocation: str, param: Param, value: Any) -> Any:
    """Convert a bound value to the parameter's type, as PowerShell's binder does."""
    kind = param.kind
    try:
        if kind == "switch":
            return to_bool(value)
        if kind == "string":
            if isinstance(value, list):
                if len(value) != 1:
                    raise binding_error(
                        spec, invocation,
                        f"Cannot convert 'System.Object[]' to the type 'System.String' required by "
                        f"parameter '{param.name}'. Specified method is not supported.",
                        "CannotConvertArgument", target="", target_type="")
                value = value[0]
            text = to_string(value)
            _validate_choice(spec, invocation, param, text)
            return text
        if kind == "string[]":
            items = value if isinstance(value, list) else [value]
            return [to_string(item) for item in items]
        if kind == "int":
            number = to_number(value)
            return int(number)
        if kind == "bool":
            return to_bool(value)
        if kind == "scriptblock":
            if not isinstance(value, ScriptBlock):
                raise binding_error(
                    spec, invocation,
                    f"Cannot bind parameter '{param.name}'. Cannot convert the \"{to_string(value)}\" "
                    f"value of type \"{type_name_of(value)}\" to type "
                    "\"System.Management.Automation.ScriptBlock\".",
                    "CannotConvertArgumentNoMessage")
            return value
        if kind == "hashtable":
            if not isinstance(value, Hashtable):
                raise binding_error(
                    spec, invocation,
                    f"Cannot bind parameter '{param.name}'. Cannot convert the \"{to_string(value)}\" "
                    f"value of type \"{type_name_of(value)}\" to type \"System.Collections.Hashtable\".",
                    "CannotConvertArgumentNoMessage")
            return value
        if kind == "object[]":
            return value if isinstance(value, list) else [value]
        return value
    except ConversionError as exc:
        raise binding_error(
            spec, invocation, f"Cannot bind parameter '{param.name}'. {exc}",
            "CannotConvertArgumentNoMessage") from None


def _validate_choice(spec: CmdletSpec, invocation: str, param: Param, text: str) -> None:
    if param.choices and text.lower() not in (c.lower() for c in param.choices):
        raise binding_error(
            spec, invocation,
            f"Cannot validate argument on parameter '{param.name}'. The argument \"{text}\" does "
            f"not belong to the set \"{','.join(param.choices)}\" specified by the ValidateSet "
            "attribute. Supply an argument that is in the set and then try the command again.",
            "ParameterArgumentValidationError")


@dataclass
class BoundCall:
    """The outcome of binding the command line (before pipeline input)."""

    named: dict[str, Any]
    explicit: set[str]


def bind_arguments(spec: CmdletSpec, invocation: str,
                   arguments: list[tuple[str | None, Any, bool]]) -> BoundCall:
    """Bind ``(parameter name or None, value, has_value)`` triples from the command line."""
    named: dict[str, Any] = {}
    positional: list[Any] = []
    index = 0
    while index < len(arguments):
        name, value, has_value = arguments[index]
        index += 1
        if name is None:
            positional.append(value)
            continue
        param = find_param(spec, invocation, name)
        if param.name in named:
            raise binding_error(
                spec, invocation,
                f"Cannot bind parameter because parameter '{param.name}' is specified more than "
                "once. To provide multiple values to parameters that can accept multiple values, "
                'use the array syntax. For example, "-parameter value1,value2,value3".',
                "ParameterAlreadyBound", target="", target_type="")
        if param.kind == "switch":
            named[param.name] = to_bool(value) if has_value else True
            continue
        if not has_value:
            if index < len(arguments) and arguments[index][0] is None:
                value = arguments[index][1]
                index += 1
            else:
                raise binding_error(
                    spec, invocation,
                    f"Missing an argument for parameter '{param.name}'. Specify a parameter of "
                    f"type '{KIND_TYPES.get(param.kind, 'System.Object')}' and try again.",
                    "MissingArgument", target="", target_type="")
        named[param.name] = convert_argument(spec, invocation, param, value)
    slots = sorted((p for p in spec.params if p.position is not None and p.name not in named),
                   key=lambda p: p.position or 0)
    for position, value in enumerate(positional):
        if not slots:
            raise binding_error(
                spec, invocation,
                f"A positional parameter cannot be found that accepts argument '{to_string(value)}'.",
                "PositionalParameterNotFound", target=to_string(value), target_type="")
        param = slots.pop(0)
        if param.remaining and len(positional) - position > 1:
            named[param.name] = convert_argument(spec, invocation, param, positional[position:])
            break
        named[param.name] = convert_argument(spec, invocation, param, value)
    if named.get("WhatIf"):
        raise CommandFailure(ErrorRecord(
            message="This Windows node simulator does not implement -WhatIf; run the command "
                    "without it.", error_id="WhatIfNotSupported", category="NotImplemented",
            exception="NotSupportedException", command=invocation, command_type=spec.type_name))
    return BoundCall(named, set(named))


def bind_pipeline_item(spec: CmdletSpec, invocation: str, call: BoundCall,
                       item: Any) -> dict[str, Any] | None:
    """Bind one pipeline input object; None when no parameter accepts it.

    PowerShell's order: by value without type coercion, then by property name, then by value
    with coercion.
    """
    by_value = [p for p in spec.params if p.by_value and p.name not in call.explicit]
    for param in by_value:
        exact = (isinstance(item, str) if param.kind in ("string", "string[]")
                 else isinstance(item, ScriptBlock) if param.kind == "scriptblock"
                 else param.kind in ("object", "object[]"))
        if exact:
            return {**call.named, param.name: convert_argument(spec, invocation, param, item)}
    if isinstance(item, PSObject):
        bound = dict(call.named)
        matched = False
        for param in spec.params:
            if not param.by_property or param.name in call.explicit:
                continue
            for candidate in (param.name, *param.aliases):
                if item.has(candidate):
                    bound[param.name] = convert_argument(spec, invocation, param, item.get(candidate))
                    matched = True
                    break
        if matched:
            return bound
    for param in by_value:
        if isinstance(item, PSObject | Hashtable) and param.kind != "object":
            continue
        return {**call.named, param.name: convert_argument(spec, invocation, param, item)}
    return None


def check_mandatory(spec: CmdletSpec, invocation: str, named: dict[str, Any]) -> None:
    missing = [p.name for p in spec.params if p.mandatory and p.name not in named]
    if missing:
        raise binding_error(
            spec, invocation,
            "Cannot process command because of one or more missing mandatory parameters: "
            f"{' '.join(missing)}.", "MissingMandatoryParameter", target="", target_type="")


def pipeline_input_error(spec: CmdletSpec, invocation: str, item: Any) -> ErrorRecord:
    return ErrorRecord(
        message=("The input object cannot be bound to any parameters for the command either "
                 "because the command does not take pipeline input or the input and its "
                 "properties do not match any of the parameters that take pipeline input."),
        error_id="InputObjectNotBound", category="InvalidArgument",
        exception="ParameterBindingException", target=to_string(item),
        target_type=type_name_of(item).rsplit(".", 1)[-1], command=invocation,
        command_type=spec.type_name)
