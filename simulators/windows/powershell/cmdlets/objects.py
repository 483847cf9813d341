"""Pipeline object cmdlets: output, selection, filtering, iteration, sorting and conversion."""

from __future__ import annotations

import functools
from typing import Any

from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.dotnet import get_member, invoke_method
from proxyfleet.simulators.windows.powershell.errors import ErrorRecord
from proxyfleet.simulators.windows.powershell.formatting import JsonFormatError, format_for_host, from_json, to_json
from proxyfleet.simulators.windows.powershell.operators import compare
from proxyfleet.simulators.windows.powershell.values import (
    Hashtable,
    PSObject,
    ScriptBlock,
    collapse,
    compare_order,
    enumerate_value,
    equals,
    to_bool,
    to_string,
    wildcard_regex,
)

_NS = "Microsoft.PowerShell.Commands."
_UTILITY = "Microsoft.PowerShell.Commands.Utility."


async def write_output(ctx: CommandContext, args: dict[str, Any]) -> None:
    if "InputObject" not in args:
        return
    value = args["InputObject"]
    if args.get("NoEnumerate"):
        ctx.write(value)
    else:
        for item in enumerate_value(value):
            ctx.write(item)


async def write_host(ctx: CommandContext, args: dict[str, Any]) -> None:
    separator = to_string(args.get("Separator", " "))
    values = enumerate_value(args.get("Object")) if "Object" in args else []
    text = separator.join(to_string(v) for v in values)
    ctx.host_write(text + ("" if args.get("NoNewline") else "\n"))


async def write_error(ctx: CommandContext, args: dict[str, Any]) -> None:
    message = to_string(args.get("Message", ""))
    line = ctx.interpreter.script[ctx.extent.start:ctx.extent.end]
    record = ErrorRecord(
        message=message, error_id=args.get("ErrorId") or "Microsoft.PowerShell.Commands.WriteErrorException",
        category=args.get("Category") or "NotSpecified", exception="WriteErrorException",
        target=to_string(args.get("TargetObject") or ""), command=line, activity="Write-Error")
    ctx.interpreter.write_error(record, ctx.error_action)


async def write_warning(ctx: CommandContext, args: dict[str, Any]) -> None:
    preference = to_string(ctx.interpreter.variables.get("warningpreference", "Continue")).lower()
    if preference not in ("silentlycontinue", "ignore"):
        ctx.host_write(f"WARNING: {args['Message']}\n")


async def write_verbose(ctx: CommandContext, args: dict[str, Any]) -> None:
    preference = to_string(ctx.interpreter.variables.get("verbosepreference")).lower()
    if args.get("Verbose") or preference == "continue":
        ctx.host_write(f"VERBOSE: {args['Message']}\n")


def _property_value(item: Any, name: str) -> Any:
    return get_member(item, name)


async def _calculated(ctx: CommandContext, item: Any, spec: Hashtable) -> tuple[str, Any]:
    name = next((spec[k] for k in ("Name", "N", "Label", "L") if k in spec), None)
    expression = next((spec[k] for k in ("Expression", "E") if k in spec), None)
    if isinstance(expression, ScriptBlock):
        value = collapse(await ctx.invoke(expression, item))
    else:
        value = _property_value(item, to_string(expression))
    return to_string(name if name is not None else expression), value


async def select_object(ctx: CommandContext, args: dict[str, Any]) -> None:
    items = list(ctx.input) if ctx.piped else enumerate_value(args.get("InputObject"))
    if args.get("Skip"):
        items = items[args["Skip"]:]
    if args.get("First") is not None:
        items = items[:args["First"]]
    if args.get("Last") is not None:
        items = items[-args["Last"]:] if args["Last"] else []
    expand = args.get("ExpandProperty")
    properties = args.get("Property")
    seen: list[Any] = []
    for item in items:
        if expand:
            if (isinstance(item, PSObject) and not item.has(expand)) or item is None:
                ctx.error(f'Property "{expand}" cannot be found.', "ExpandPropertyNotFound",
                          "InvalidArgument", "PSArgumentException", to_string(item))
                continue
            outputs = enumerate_value(_property_value(item, expand))
        elif properties:
            props: list[tuple[str, Any]] = []
            for spec in properties:
                if isinstance(spec, Hashtable):
                    props.append(await _calculated(ctx, item, spec))
                    continue
                pattern = to_string(spec)
                if any(c in pattern for c in "*?[") and isinstance(item, PSObject):
                    regex = wildcard_regex(pattern)
                    props.extend((n, v) for n, v in item.items() if regex.match(n))
                else:
                    props.append((pattern, _property_value(item, pattern)))
            type_name = item.type_name if isinstance(item, PSObject) else "System.Object"
            outputs = [PSObject([f"Selected.{type_name}",
                                 "System.Management.Automation.PSCustomObject"], props)]
        else:
            outputs = [item]
        for output in outputs:
            if args.get("Unique"):
                if any(equals(previous, output) for previous in seen):
                    continue
                seen.append(output)
            ctx.write(output)


_WHERE_OPERATORS = ("EQ", "NE", "GT", "GE", "LT", "LE", "Like", "NotLike", "Match", "NotMatch",
                    "Contains", "NotContains", "In", "NotIn", "CEQ", "CNE", "CLike", "CMatch")


async def where_object(ctx: CommandContext, args: dict[str, Any]) -> None:
    condition = args.get("FilterScript")
    items = ctx.input if ctx.piped else enumerate_value(args.get("InputObject"))
    operator = next((op for op in _WHERE_OPERATORS if args.get(op)), None)
    for item in items:
        if isinstance(condition, ScriptBlock):
            keep = to_bool(collapse(await ctx.invoke(condition, item)))
        elif condition is not None:
            value = _property_value(item, to_string(condition))
            if operator is None:
                keep = to_bool(value)
            else:
                result, _ = compare("-" + operator.lower(), value, args.get("Value"))
                keep = to_bool(result)
        else:
            ctx.fail("Cannot process command because of one or more missing mandatory "
                     "parameters: FilterScript.", "MissingMandatoryParameter", "InvalidArgument",
                     "ParameterBindingException", "", "")
        if keep:
            ctx.write(item)


async def foreach_object(ctx: CommandContext, args: dict[str, Any]) -> None:
    blocks = enumerate_value(args.get("Process")) if "Process" in args else []
    begin, end = args.get("Begin"), args.get("End")
    items = ctx.input if ctx.piped else (
        enumerate_value(args["InputObject"]) if "InputObject" in args else [None])
    if begin is not None:
        for output in await ctx.invoke(begin, None):
            ctx.write(output)
    member = args.get("MemberName")
    if blocks and not isinstance(blocks[0], ScriptBlock):
        member, blocks = to_string(blocks[0]), []
    for item in items:
        for block in blocks:
            if not isinstance(block, ScriptBlock):
                ctx.fail(f"Cannot bind parameter 'Process'. Cannot convert the \"{to_string(block)}\""
                         " value of type \"System.String\" to type "
                         "\"System.Management.Automation.ScriptBlock\".",
                         "CannotConvertArgumentNoMessage", "InvalidArgument",
                         "ParameterBindingException")
            for output in await ctx.invoke(block, item):
                ctx.write(output)
        if member is not None:
            arguments = args.get("ArgumentList")
            if arguments is not None:
                result = invoke_method(item, member, list(arguments))
            else:
                result = _property_value(item, member)
            for output in enumerate_value(result) if result is not None else []:
                ctx.write(output)
    if end is not None:
        for output in await ctx.invoke(end, None):
            ctx.write(output)


async def sort_object(ctx: CommandContext, args: dict[str, Any]) -> None:
    items = list(ctx.input)
    properties = [to_string(p) for p in enumerate_value(args.get("Property"))] \
        if args.get("Property") is not None else []

    def key_of(item: Any) -> list[Any]:
        return [_property_value(item, p) for p in properties] if properties else [item]

    def order(a: Any, b: Any) -> int:
        for left, right in zip(key_of(a), key_of(b), strict=True):
            result = compare_order(left, right)
            if result:
                return result
        return 0

    ordered = sorted(items, key=functools.cmp_to_key(order), reverse=bool(args.get("Descending")))
    seen: list[Any] = []
    for item in ordered:
        if args.get("Unique"):
            if any(order(item, previous) == 0 for previous in seen):
                continue
            seen.append(item)
        ctx.write(item)


async def convert_to_json(ctx: CommandContext, args: dict[str, Any]) -> None:
    depth = args.get("Depth", 2)
    if depth > 100 or depth < 1:
        ctx.fail(f"Cannot validate argument on parameter 'Depth'. The {depth} argument is "
                 "greater than the maximum allowed range of 100. Supply an argument that is less "
                 "than or equal to 100 and then try the command again." if depth > 100 else
                 f"Cannot validate argument on parameter 'Depth'. The {depth} argument is less "
                 "than the minimum allowed range of 1.", "ParameterArgumentValidationError",
                 "InvalidData", "ParameterBindingValidationException")
    if ctx.piped:
        if not ctx.input:
            return
        value = ctx.input[0] if len(ctx.input) == 1 else list(ctx.input)
    else:
        value = args.get("InputObject")
    ctx.write(to_json(value, depth=depth, compress=bool(args.get("Compress"))))


async def convert_from_json(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts = ctx.input if ctx.piped else enumerate_value(args.get("InputObject"))
    text = "\n".join(to_string(t) for t in texts)
    if not text.strip():
        return
    try:
        ctx.write(from_json(text))
    except JsonFormatError as exc:
        ctx.error(str(exc), "System.ArgumentException", "NotSpecified", "ArgumentException", text)


async def out_string(ctx: CommandContext, args: dict[str, Any]) -> None:
    items = ctx.input if ctx.piped else enumerate_value(args.get("InputObject"))
    text = format_for_host(list(items))
    if args.get("Stream"):
        for line in text.splitlines():
            ctx.write(line)
    else:
        ctx.write(text)


async def out_null(ctx: CommandContext, args: dict[str, Any]) -> None:
    return None


_INPUT = Param("InputObject", "object", by_value=True)

CMDLETS = (
    CmdletSpec("Write-Output", _NS + "WriteOutputCommand", write_output, (
        Param("InputObject", "object", position=0, by_value=True, remaining=True),
        Param("NoEnumerate", "switch"))),
    CmdletSpec("Write-Host", _NS + "WriteHostCommand", write_host, (
        Param("Object", "object", position=0, by_value=True, remaining=True),
        Param("NoNewline", "switch"), Param("Separator", "object"),
        Param("ForegroundColor", "string"), Param("BackgroundColor", "string"))),
    CmdletSpec("Write-Error", _NS + "WriteErrorCommand", write_error, (
        Param("Message", "string", position=0, by_value=True, aliases=("Msg",)),
        Param("Category", "string"), Param("ErrorId", "string"), Param("TargetObject", "object"))),
    CmdletSpec("Write-Warning", _NS + "WriteWarningCommand", write_warning, (
        Param("Message", "string", position=0, by_value=True, mandatory=True, aliases=("Msg",)),)),
    CmdletSpec("Write-Verbose", _NS + "WriteVerboseCommand", write_verbose, (
        Param("Message", "string", position=0, by_value=True, mandatory=True, aliases=("Msg",)),)),
    CmdletSpec("Select-Object", _UTILITY + "SelectObjectCommand", select_object, (
        Param("Property", "object[]", position=0), Param("ExpandProperty", "string"),
        Param("First", "int"), Param("Last", "int"), Param("Skip", "int"),
        Param("Unique", "switch"), _INPUT), collects_input=True),
    CmdletSpec("Where-Object", _NS + "WhereObjectCommand", where_object, (
        Param("FilterScript", "object", position=0, aliases=("Property",)),
        Param("Value", "object", position=1), _INPUT,
        *(Param(op, "switch") for op in _WHERE_OPERATORS)), collects_input=True),
    CmdletSpec("ForEach-Object", _NS + "ForEachObjectCommand", foreach_object, (
        Param("Process", "object[]", position=0, remaining=True),
        Param("Begin", "scriptblock"), Param("End", "scriptblock"),
        Param("MemberName", "string"), Param("ArgumentList", "object[]", aliases=("Args",)),
        _INPUT), collects_input=True),
    CmdletSpec("Sort-Object", _NS + "SortObjectCommand", sort_object, (
        Param("Property", "object[]", position=0), Param("Descending", "switch"),
        Param("Unique", "switch"), _INPUT), collects_input=True),
    CmdletSpec("ConvertTo-Json", _NS + "ConvertToJsonCommand", convert_to_json, (
        Param("InputObject", "object", position=0, by_value=True, mandatory=True),
        Param("Depth", "int"), Param("Compress", "switch")), collects_input=True),
    CmdletSpec("ConvertFrom-Json", _NS + "ConvertFromJsonCommand", convert_from_json, (
        Param("InputObject", "string", position=0, by_value=True, mandatory=True),),
        collects_input=True),
    CmdletSpec("Out-String", _NS + "OutStringCommand", out_string, (
        _INPUT, Param("Stream", "switch"), Param("Width", "int")), collects_input=True),
    CmdletSpec("Out-Null", _NS + "OutNullCommand", out_null, (_INPUT,), collects_input=True),
)
