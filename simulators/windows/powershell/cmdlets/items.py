"""Item and item-property cmdlets over the FileSystem, Registry, Certificate and Environment
providers."""

from __future__ import annotations

from typing import Any

from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.providers import (
    CERTIFICATE,
    ENVIRONMENT,
    FILESYSTEM,
    REGISTRY,
    PathProblem,
    ProviderPath,
    child_items,
    exists,
    expand,
    get_item,
    is_container,
    not_found,
    remove_item,
    resolve,
)
from proxyfleet.simulators.windows.powershell.values import PSObject, to_number, to_string, wildcard_regex
from proxyfleet.simulators.windows.registry import VALUE_KINDS

_NS = "Microsoft.PowerShell.Commands."


def report(ctx: CommandContext, problem: PathProblem, target: str) -> None:
    ctx.error(str(problem), problem.error_id, problem.category, problem.exception, target)


def resolve_paths(ctx: CommandContext, texts: list[str], literal: bool,
                  must_exist: bool = True) -> list[ProviderPath]:
    """Resolve user paths, expanding wildcards; missing items are reported, not returned."""
    found: list[ProviderPath] = []
    for text in texts:
        try:
            path = resolve(ctx.session, text)
        except PathProblem as problem:
            report(ctx, problem, text)
            continue
        if path.has_wildcard and not literal:
            found.extend(expand(ctx.session, path))
            continue
        if must_exist and not exists(ctx.session, path):
            report(ctx, not_found(path.display), path.display)
            continue
        found.append(path)
    return found


def _paths(args: dict[str, Any], default: str | None = None,
           ctx: CommandContext | None = None) -> tuple[list[str], bool]:
    """The -Path or -LiteralPath values; without either, the default or a missing-Path error."""
    if args.get("LiteralPath") is not None:
        return list(args["LiteralPath"]), True
    if args.get("Path") is not None:
        return list(args["Path"]), False
    if default is None and ctx is not None:
        ctx.fail("Cannot process command because of one or more missing mandatory parameters: "
                 "Path.", "MissingMandatoryParameter", "InvalidArgument",
                 "ParameterBindingException", "", "")
    return ([default] if default is not None else []), False


PATH = Param("Path", "string[]", position=0, by_property=True)
LITERAL_PATH = Param("LiteralPath", "string[]", aliases=("PSPath", "LP"), by_property=True)


async def get_child_item(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts, literal = _paths(args, ".")
    name_filter = args.get("Filter")
    pattern = wildcard_regex(name_filter) if name_filter else None
    for path in resolve_paths(ctx, texts, literal):
        try:
            items = child_items(ctx.session, path, recurse=bool(args.get("Recurse")))
        except PathProblem as problem:
            report(ctx, problem, path.display)
            continue
        for item in items:
            if pattern and not pattern.match(to_string(item.get("PSChildName"))):
                continue
            if args.get("File") and item.get("PSIsContainer"):
                continue
            if args.get("Directory") and not item.get("PSIsContainer"):
                continue
            ctx.write(to_string(item.get("PSChildName")) if args.get("Name") else item)


async def get_item_cmd(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts, literal = _paths(args, ctx=ctx)
    for path in resolve_paths(ctx, texts, literal):
        ctx.write(get_item(ctx.session, path))


async def test_path(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts, literal = _paths(args, ctx=ctx)
    kind = (args.get("PathType") or "Any").lower()
    for text in texts:
        try:
            path = resolve(ctx.session, text)
        except PathProblem:
            ctx.write(False)
            continue
        found = exists(ctx.session, path) if not (literal and path.has_wildcard) else False
        if found and kind != "any":
            container = is_container(ctx.session, path)
            found = container if kind == "container" else not container
        ctx.write(found)


async def remove_item_cmd(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts, literal = _paths(args, ctx=ctx)
    for path in resolve_paths(ctx, texts, literal):
        try:
            denied = remove_item(ctx.session, path, recurse=bool(args.get("Recurse")))
        except PathProblem as problem:
            report(ctx, problem, path.display)
            continue
        for refusal in denied:
            report(ctx, refusal, path.display)


async def new_item(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts = list(args.get("Path") or ["."])
    kind = (args.get("ItemType") or "File").lower()
    for text in texts:
        full = text + "\\" + args["Name"] if args.get("Name") else text
        try:
            path = resolve(ctx.session, full)
        except PathProblem as problem:
            report(ctx, problem, full)
            continue
        fs = ctx.session.machine.filesystem
        if path.provider == REGISTRY:
            ctx.session.machine.registry.create_key(path.path)
            ctx.write(get_item(ctx.session, path))
            continue
        if path.provider != FILESYSTEM:
            ctx.error(f"The simulated node cannot create items in the {path.provider} provider.",
                      "NewItemNotSupported", "NotImplemented", "NotSupportedException", full)
            continue
        if fs.exists(path.path) and not args.get("Force"):
            ctx.error(f"An item with the specified name {path.path} already exists.",
                      "DirectoryExist" if kind == "directory" else "NewItemIOError",
                      "ResourceExists", "IOException", path.path)
            continue
        if kind in ("directory", "container"):
            fs.mkdir(path.path)
        elif kind == "file":
            parent = path.path.rsplit("\\", 1)[0]
            if not fs.is_dir(parent if not parent.endswith(":") else parent + "\\"):
                if not args.get("Force"):
                    ctx.error(f"Could not find a part of the path '{path.path}'.",
                              "NewItemIOError", "WriteError", "DirectoryNotFoundException",
                              path.path)
                    continue
                fs.mkdir(parent)
            value = args.get("Value")
            fs.write_bytes(path.path, to_string(value).encode("cp1252", errors="replace")
                           if value is not None else b"")
        else:
            ctx.fail('Cannot process argument because the value of argument "type" is not valid.'
                     ' Change the value of the "type" argument and run the operation again.',
                     "NewItemTypeNotValid", "InvalidArgument", "PSArgumentException")
        ctx.write(get_item(ctx.session, path))


async def mkdir(ctx: CommandContext, args: dict[str, Any]) -> None:
    await new_item(ctx, {**args, "ItemType": "Directory", "Force": True})


async def set_location(ctx: CommandContext, args: dict[str, Any]) -> None:
    texts, literal = _paths(args, ctx.session.home)
    targets = resolve_paths(ctx, texts[:1], literal)
    if not targets:
        return
    target = targets[0]
    if not is_container(ctx.session, target):
        ctx.fail(f"Cannot find path '{target.display}' because it does not exist.", "PathNotFound",
                 "ObjectNotFound", "ItemNotFoundException", target.display)
    ctx.session.location = target.display if target.provider != FILESYSTEM else target.path


async def get_location(ctx: CommandContext, args: dict[str, Any]) -> None:
    location = ctx.session.location
    ctx.write(PSObject(["System.Management.Automation.PathInfo"], {"Path": location},
                       display=("Path",), string_form=location))


# --- registry item properties ---------------------------------------------------------------


def _registry_key(ctx: CommandContext, text: str):  # type: ignore[no-untyped-def]
    try:
        path = resolve(ctx.session, text)
    except PathProblem as problem:
        report(ctx, problem, text)
        return None, None
    if path.provider != REGISTRY:
        if path.provider in (CERTIFICATE, ENVIRONMENT, FILESYSTEM) and exists(ctx.session, path):
            ctx.error(f"The simulated node supports item properties only in the registry, not "
                      f"at '{path.display}'.", "ItemPropertyNotSupported", "NotImplemented",
                      "NotSupportedException", path.display)
            return None, None
        report(ctx, not_found(path.display), path.display)
        return None, None
    key = ctx.session.machine.registry.key(path.path)
    if key is None:
        report(ctx, not_found(path.display), path.display)
        return None, None
    return path, key


def _property_missing(ctx: CommandContext, name: str, key_path: str) -> None:
    ctx.error(f"Property {name} does not exist at path {key_path}.",
              "System.Management.Automation.PSArgumentException", "InvalidArgument",
              "PSArgumentException", name)


def _registry_value(value: Any, kind: str) -> Any:
    if kind == "MultiString":
        return [to_string(v) for v in (value if isinstance(value, list) else [value])]
    if kind in ("DWord", "QWord"):
        return int(to_number(value))
    if kind == "Binary":
        return bytes(value) if isinstance(value, bytes) else bytes(int(to_number(v)) for v in value)
    return to_string(value)


def _infer_kind(value: Any) -> str:
    if isinstance(value, list):
        return "MultiString"
    if isinstance(value, int) and not isinstance(value, bool):
        return "DWord"
    if isinstance(value, bytes):
        return "Binary"
    return "String"


async def get_item_property(ctx: CommandContext, args: dict[str, Any]) -> None:
    for text in args.get("Path") or args.get("LiteralPath") or []:
        path, key = _registry_key(ctx, text)
        if key is None or path is None:
            continue
        names = args.get("Name")
        props: list[tuple[str, Any]] = []
        if names:
            for name in names:
                value = key.get(name)
                if value is None:
                    _property_missing(ctx, name, key.path)
                    continue
                props.append((value.name, value.data))
            if not props:
                continue
        else:
            props = [(value.name, value.data) for value in key.values.values()]
        parent = key.path.rsplit("\\", 1)[0]
        props += [("PSPath", path.ps_path),
                  ("PSParentPath", "Microsoft.PowerShell.Core\\Registry::" + parent),
                  ("PSChildName", key.name), ("PSDrive", path.display.split(":")[0]),
                  ("PSProvider", "Microsoft.PowerShell.Core\\Registry")]
        ctx.write(PSObject(["System.Management.Automation.PSCustomObject"], props))


async def get_item_property_value(ctx: CommandContext, args: dict[str, Any]) -> None:
    for text in args.get("Path") or args.get("LiteralPath") or []:
        _, key = _registry_key(ctx, text)
        if key is None:
            continue
        for name in args["Name"]:
            value = key.get(name)
            if value is None:
                _property_missing(ctx, name, key.path)
                continue
            ctx.write(value.data)


async def set_item_property(ctx: CommandContext, args: dict[str, Any]) -> None:
    for text in args.get("Path") or args.get("LiteralPath") or []:
        _, key = _registry_key(ctx, text)
        if key is None:
            continue
        existing = key.get(args["Name"])
        kind = args.get("Type") or (existing.kind if existing else _infer_kind(args.get("Value")))
        kind = next(k for k in VALUE_KINDS if k.lower() == kind.lower())
        key.set(args["Name"], _registry_value(args.get("Value"), kind), kind)


async def new_item_property(ctx: CommandContext, args: dict[str, Any]) -> None:
    for text in args.get("Path") or args.get("LiteralPath") or []:
        path, key = _registry_key(ctx, text)
        if key is None or path is None:
            continue
        if key.get(args["Name"]) is not None and not args.get("Force"):
            ctx.error("The property already exists.", "System.IO.IOException", "ResourceExists",
                      "IOException", path.display)
            continue
        kind = args.get("PropertyType") or "String"
        kind = next((k for k in VALUE_KINDS if k.lower() == kind.lower()), "String")
        key.set(args["Name"], _registry_value(args.get("Value"), kind), kind)
        value = key.get(args["Name"])
        assert value is not None
        ctx.write(PSObject(["System.Management.Automation.PSCustomObject"],
                           [(value.name, value.data), ("PSPath", path.ps_path)]))


async def remove_item_property(ctx: CommandContext, args: dict[str, Any]) -> None:
    for text in args.get("Path") or args.get("LiteralPath") or []:
        _, key = _registry_key(ctx, text)
        if key is None:
            continue
        for name in args["Name"]:
            if not key.delete(name):
                _property_missing(ctx, name, key.path)


_KINDS = (*VALUE_KINDS, "Unknown", "None")

CMDLETS = (
    CmdletSpec("Get-ChildItem", _NS + "GetChildItemCommand", get_child_item, (
        PATH, LITERAL_PATH, Param("Filter", "string", position=1), Param("Recurse", "switch", aliases=("s",)),
        Param("Force", "switch"), Param("Name", "switch"), Param("File", "switch"),
        Param("Directory", "switch", aliases=("ad", "d")))),
    CmdletSpec("Get-Item", _NS + "GetItemCommand", get_item_cmd, (
        Param("Path", "string[]", position=0, by_value=True, by_property=True), LITERAL_PATH,
        Param("Force", "switch"))),
    CmdletSpec("Test-Path", _NS + "TestPathCommand", test_path, (
        Param("Path", "string[]", position=0, by_value=True, by_property=True),
        LITERAL_PATH, Param("PathType", "string", choices=("Any", "Container", "Leaf"), aliases=("Type",)),
        Param("IsValid", "switch"))),
    CmdletSpec("Remove-Item", _NS + "RemoveItemCommand", remove_item_cmd, (
        Param("Path", "string[]", position=0, by_value=True, by_property=True), LITERAL_PATH,
        Param("Recurse", "switch", aliases=("r",)), Param("Force", "switch")), should_process=True),
    CmdletSpec("New-Item", _NS + "NewItemCommand", new_item, (
        Param("Path", "string[]", position=0, by_property=True),
        Param("ItemType", "string", aliases=("Type",)), Param("Name", "string", by_property=True),
        Param("Value", "object", by_value=True, by_property=True), Param("Force", "switch")),
        should_process=True),
    CmdletSpec("mkdir", _NS + "NewItemCommand", mkdir, (
        Param("Path", "string[]", position=0, by_property=True), Param("Name", "string"),
        Param("Force", "switch"))),
    CmdletSpec("Set-Location", _NS + "SetLocationCommand", set_location, (
        Param("Path", "string[]", position=0, by_value=True, by_property=True), LITERAL_PATH)),
    CmdletSpec("Get-Location", _NS + "GetLocationCommand", get_location, ()),
    CmdletSpec("Get-ItemProperty", _NS + "GetItemPropertyCommand", get_item_property, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        Param("Name", "string[]", position=1))),
    CmdletSpec("Get-ItemPropertyValue", _NS + "GetItemPropertyValueCommand",
               get_item_property_value, (
                   Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
                   Param("Name", "string[]", position=1, mandatory=True))),
    CmdletSpec("Set-ItemProperty", _NS + "SetItemPropertyCommand", set_item_property, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        Param("Name", "string", position=1, mandatory=True),
        Param("Value", "object", position=2, by_value=True), Param("Type", "string", choices=_KINDS),
        Param("Force", "switch"), Param("PassThru", "switch")), should_process=True),
    CmdletSpec("New-ItemProperty", _NS + "NewItemPropertyCommand", new_item_property, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        Param("Name", "string", position=1, mandatory=True),
        Param("Value", "object", position=2), Param("PropertyType", "string", aliases=("Type",),
                                                    choices=_KINDS),
        Param("Force", "switch")), should_process=True),
    CmdletSpec("Remove-ItemProperty", _NS + "RemoveItemPropertyCommand", remove_item_property, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        Param("Name", "string[]", position=1, mandatory=True), Param("Force", "switch")),
        should_process=True),
)
