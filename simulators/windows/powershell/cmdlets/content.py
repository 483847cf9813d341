"""File content cmdlets with Windows PowerShell 5.1's encodings: ``Set-Content`` writes the ANSI
code page, ``Out-File`` and ``>`` write UTF-16LE with a BOM, ``-Encoding UTF8`` writes a BOM."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.cmdlets.items import LITERAL_PATH, report, resolve_paths
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.providers import FILESYSTEM, PathProblem, resolve
from proxyfleet.simulators.windows.powershell.values import PSObject, enumerate_value, to_string

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter

_NS = "Microsoft.PowerShell.Commands."
ENCODINGS = ("Unknown", "String", "Unicode", "BigEndianUnicode", "UTF8", "UTF7", "UTF32", "ASCII",
             "Default", "OEM", "Byte")
_CODECS = {"unicode": ("utf-16-le", b"\xff\xfe"), "string": ("utf-16-le", b"\xff\xfe"),
           "unknown": ("utf-16-le", b"\xff\xfe"), "bigendianunicode": ("utf-16-be", b"\xfe\xff"),
           "utf8": ("utf-8", b"\xef\xbb\xbf"), "utf7": ("utf-7", b""),
           "utf32": ("utf-32-le", b"\xff\xfe\x00\x00"), "ascii": ("ascii", b""),
           "default": ("cp1252", b""), "oem": ("cp437", b"")}


def encode(text: str, encoding: str) -> bytes:
    codec, bom = _CODECS[encoding.lower()]
    return bom + text.encode(codec, errors="replace")


def decode(data: bytes, encoding: str | None) -> str:
    """Decode file bytes as Get-Content does: a BOM wins, otherwise the ANSI code page."""
    for codec, bom in (("utf-8", b"\xef\xbb\xbf"), ("utf-32-le", b"\xff\xfe\x00\x00"),
                       ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace")
    if encoding and encoding.lower() not in ("default", "unknown", "string"):
        return data.decode(_CODECS[encoding.lower()][0], errors="replace")
    return data.decode("cp1252", errors="replace")


def _file_target(ctx_or_interp: CommandContext | Interpreter, text: str) -> str:
    session = ctx_or_interp.session
    path = resolve(session, text)
    if path.provider != FILESYSTEM:
        raise PathProblem(f"The simulated node can write content only to files, not to "
                          f"'{path.display}'.", "ContentNotSupported", "NotImplemented",
                          "NotSupportedException")
    return path.path


def _write_text(ctx: CommandContext, target: str, data: bytes, append: bool,
                error_id: str) -> None:
    fs = ctx.session.machine.filesystem
    if fs.is_dir(target):
        ctx.error(f"Access to the path '{target}' is denied.", error_id, "PermissionDenied",
                  "UnauthorizedAccessException", target)
        return
    try:
        if append and fs.exists(target):
            data = fs.read_bytes(target) + data
        fs.write_bytes(target, data)
    except FileNotFoundError:
        ctx.error(f"Could not find a part of the path '{target}'.", error_id, "ObjectNotFound",
                  "DirectoryNotFoundException", target)


def out_file(interpreter: Interpreter, path: str, text: str, encoding: str, append: bool) -> None:
    """What ``> file`` does: formatted output, UTF-16LE with BOM."""
    fs = interpreter.session.machine.filesystem
    target = _file_target(interpreter, path)
    data = encode(text.replace("\n", "\r\n"), encoding)
    if append and fs.exists(target):
        data = fs.read_bytes(target) + data[len(_CODECS[encoding.lower()][1]):]
    fs.write_bytes(target, data)


async def get_content(ctx: CommandContext, args: dict[str, Any]) -> None:
    literal = args.get("LiteralPath") is not None
    texts = args.get("LiteralPath") or args.get("Path") or []
    encoding = args.get("Encoding")
    fs = ctx.session.machine.filesystem
    for path in resolve_paths(ctx, texts, literal):
        if path.provider != FILESYSTEM or fs.is_dir(path.path):
            ctx.error(f"Unable to get content because it is a directory: '{path.display}'. Please "
                      "use 'Get-ChildItem' instead.", "GetContentReaderUnauthorizedAccessError",
                      "PermissionDenied", "UnauthorizedAccessException", path.display)
            continue
        data = fs.read_bytes(path.path)
        if encoding and encoding.lower() == "byte":
            if args.get("Raw"):
                ctx.write(data)
            else:
                for byte in data:
                    ctx.write(byte)
            continue
        text = decode(data, encoding)
        if not text:
            continue
        if args.get("Raw"):
            ctx.write(text)
            continue
        lines = re.split(r"\r\n|\n|\r", text)
        if lines and lines[-1] == "":
            lines.pop()
        count = args.get("TotalCount")
        for line in lines if count is None or count < 0 else lines[:count]:
            ctx.write(line)


def _content_bytes(values: list[Any], encoding: str, no_newline: bool) -> bytes:
    if encoding.lower() == "byte":
        return bytes(int(v) & 0xFF for value in values for v in enumerate_value(value))
    lines = [to_string(v) for value in values for v in enumerate_value(value)]
    text = "".join(lines) if no_newline else "".join(line + "\r\n" for line in lines)
    return encode(text, encoding)


async def set_content(ctx: CommandContext, args: dict[str, Any], append: bool = False) -> None:
    if "Value" not in args and not ctx.input:
        ctx.fail("Cannot process command because of one or more missing mandatory parameters: "
                 "Value.", "MissingMandatoryParameter", "InvalidArgument",
                 "ParameterBindingException", "", "")
    values = args.get("Value", ctx.input)
    values = values if isinstance(values, list) else [values]
    encoding = args.get("Encoding") or "Default"
    data = _content_bytes(values, encoding, bool(args.get("NoNewline")))
    for text in args.get("Path") or args.get("LiteralPath") or []:
        try:
            target = _file_target(ctx, text)
        except PathProblem as problem:
            report(ctx, problem, text)
            continue
        _write_text(ctx, target, data, append,
                    "GetContentWriterDirectoryNotFoundError," + ctx.spec.type_name)


async def add_content(ctx: CommandContext, args: dict[str, Any]) -> None:
    await set_content(ctx, args, append=True)


async def out_file_cmd(ctx: CommandContext, args: dict[str, Any]) -> None:
    from proxyfleet.simulators.windows.powershell.formatting import format_for_host

    items = ctx.input if "InputObject" not in args else [args["InputObject"]]
    text = "".join(items) if args.get("NoNewline") and all(isinstance(i, str) for i in items) \
        else format_for_host(items)
    encoding = args.get("Encoding") or "Unicode"
    try:
        target = _file_target(ctx, args["FilePath"])
    except PathProblem as problem:
        report(ctx, problem, args["FilePath"])
        return
    _write_text(ctx, target, encode(text.replace("\n", "\r\n"), encoding), bool(args.get("Append")),
                "FileOpenFailure")


async def get_file_hash(ctx: CommandContext, args: dict[str, Any]) -> None:
    algorithm = (args.get("Algorithm") or "SHA256").upper()
    literal = args.get("LiteralPath") is not None
    fs = ctx.session.machine.filesystem
    for path in resolve_paths(ctx, args.get("LiteralPath") or args.get("Path") or [], literal):
        if path.provider != FILESYSTEM or fs.is_dir(path.path):
            continue
        digest = hashlib.new(algorithm.lower(), fs.read_bytes(path.path))
        ctx.write(PSObject(["Microsoft.PowerShell.Commands.FileHashInfo"], {
            "Algorithm": algorithm, "Hash": digest.hexdigest().upper(), "Path": path.path}))


_ENCODING = Param("Encoding", "string", choices=ENCODINGS)
_VALUE = Param("Value", "object[]", position=1, by_value=True, mandatory=False)

CMDLETS = (
    CmdletSpec("Get-Content", _NS + "GetContentCommand", get_content, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        Param("Raw", "switch"), _ENCODING,
        Param("TotalCount", "int", aliases=("First", "Head")), Param("Force", "switch"))),
    CmdletSpec("Set-Content", _NS + "SetContentCommand", set_content, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        _VALUE, _ENCODING, Param("NoNewline", "switch"), Param("Force", "switch")),
        should_process=True, collects_input=True),
    CmdletSpec("Add-Content", _NS + "AddContentCommand", add_content, (
        Param("Path", "string[]", position=0, by_property=True), LITERAL_PATH,
        _VALUE, _ENCODING, Param("NoNewline", "switch"), Param("Force", "switch")),
        should_process=True, collects_input=True),
    CmdletSpec("Out-File", _NS + "OutFileCommand", out_file_cmd, (
        Param("FilePath", "string", position=0, mandatory=True, aliases=("Path",)),
        Param("Encoding", "string", position=1, choices=ENCODINGS),
        Param("InputObject", "object", by_value=True), Param("Append", "switch"),
        Param("NoNewline", "switch"), Param("Force", "switch"), Param("Width", "int")),
        should_process=True, collects_input=True),
    CmdletSpec("Get-FileHash", "Microsoft.PowerShell.Commands.GetFileHashCommand", get_file_hash, (
        Param("Path", "string[]", position=0, by_value=True, by_property=True), LITERAL_PATH,
        Param("Algorithm", "string", position=1,
              choices=("SHA1", "SHA256", "SHA384", "SHA512", "MD5")))),
)
