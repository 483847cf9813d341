"""How output looks: ``Out-Default`` (tables and lists) and ``ConvertTo-Json``/``ConvertFrom-Json``.

Tables and lists follow Windows PowerShell 5.1's layout closely enough for a person reading a
terminal (header, dashes under each header, group headers such as ``Directory:``), without
its console-width truncation. JSON follows 5.1's serializer where programs notice: ``":  "``
separators, ``\\u0027``-style escapes of ``' < > &``, enums as numbers, ``\\/Date(ms)\\/``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from proxyfleet.simulators.windows.powershell.values import (
    EnumValue,
    Hashtable,
    PSObject,
    ScriptBlock,
    custom_object,
    format_datetime,
    format_number,
    to_string,
)


@dataclass(frozen=True)
class Column:
    header: str
    prop: str
    width: int = 0
    right: bool = False


@dataclass(frozen=True)
class TableView:
    columns: tuple[Column, ...]
    group_prop: str = ""
    group_label: str = ""


FILE_COLUMNS = (Column("Mode", "Mode", 6), Column("LastWriteTime", "LastWriteTime", 20),
                Column("Length", "Length", 14, right=True), Column("Name", "Name"))
VIEWS: dict[str, TableView] = {
    "System.ServiceProcess.ServiceController": TableView(
        (Column("Status", "Status", 8), Column("Name", "Name", 18),
         Column("DisplayName", "DisplayName"))),
    "System.Security.Cryptography.X509Certificates.X509Certificate2": TableView(
        (Column("Thumbprint", "Thumbprint", 41), Column("Subject", "Subject")),
        "PSParentPath", "PSParentPath"),
    "System.IO.FileInfo": TableView(FILE_COLUMNS, "PSParentPath", "Directory"),
    "System.IO.DirectoryInfo": TableView(FILE_COLUMNS, "PSParentPath", "Directory"),
    "System.Collections.DictionaryEntry": TableView(
        (Column("Name", "Name", 0), Column("Value", "Value"))),
    "Microsoft.Win32.RegistryKey": TableView(
        (Column("Name", "PSChildName", 0), Column("Property", "Property")), "PSParentPath", "Hive"),
    "System.Diagnostics.Process": TableView(
        (Column("Id", "Id", 6, right=True), Column("ProcessName", "ProcessName", 30),
         Column("StartTime", "StartTime"))),
    "Microsoft.PowerShell.Commands.FileHashInfo": TableView(
        (Column("Algorithm", "Algorithm", 0), Column("Hash", "Hash"), Column("Path", "Path"))),
}


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return "{" + ", ".join(_cell(v) for v in value) + "}"
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    return to_string(value)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool | EnumValue | ScriptBlock | bytes)


def _view_for(item: PSObject | Hashtable) -> TableView | None:
    if isinstance(item, Hashtable):
        return TableView((Column("Name", "Name"), Column("Value", "Value")))
    view = VIEWS.get(item.type_name)
    if view is not None:
        return view
    names = item.display if item.display is not None else tuple(item.names())
    if len(names) <= 4:
        return TableView(tuple(Column(name, name) for name in names))
    return None


def _rows(item: PSObject | Hashtable) -> list[PSObject]:
    if isinstance(item, Hashtable):
        return [custom_object([("Name", key), ("Value", value)]) for key, value in item.items()]
    return [item]


def _render_table(view: TableView, rows: list[PSObject]) -> str:
    widths = []
    for index, column in enumerate(view.columns):
        if index == len(view.columns) - 1:
            widths.append(0)
            continue
        content = max([len(column.header)] + [len(_cell(r.get(column.prop))) for r in rows])
        widths.append(max(column.width, content))
    lines = []

    def line(cells: list[str], rights: list[bool]) -> str:
        out = []
        for cell, width, right in zip(cells, widths, rights, strict=True):
            out.append(cell.rjust(width) if right else cell.ljust(width))
        return " ".join(out).rstrip()

    rights = [c.right for c in view.columns]
    lines.append(line([c.header for c in view.columns], rights))
    lines.append(line(["-" * len(c.header) for c in view.columns], rights))
    for row in rows:
        lines.append(line([_cell(row.get(c.prop)) for c in view.columns], rights))
    return "\n" + "\n".join(lines) + "\n"


def _render_list(items: list[PSObject]) -> str:
    blocks = []
    for item in items:
        names = list(item.display) if item.display else item.names()
        width = max((len(n) for n in names), default=0)
        blocks.append("\n".join(f"{n.ljust(width)} : {_cell(item.get(n))}" for n in names))
    return "\n" + "\n\n".join(blocks) + "\n"


def _group_header(view: TableView, value: Any) -> str:
    text = to_string(value)
    if view.group_label in ("Directory", "Hive"):
        text = text.split("::", 1)[-1]
    return f"\n\n    {view.group_label}: {text}\n\n"


def format_for_host(items: list[Any]) -> str:
    """Render pipeline output as ``Out-Default`` writes it to the console."""
    out: list[str] = []
    index = 0
    while index < len(items):
        item = items[index]
        if item is None:
            index += 1
            continue
        if isinstance(item, dt.datetime):
            out.append(f"\n{item.strftime('%A, %B')} {item.day}, {item.year} "
                       f"{format_datetime(item).split(' ', 1)[1]}\n\n")
            index += 1
            continue
        if not isinstance(item, PSObject | Hashtable) or isinstance(item, list):
            out.append(to_string(item) + "\n")
            index += 1
            continue
        view = _view_for(item)
        run: list[PSObject | Hashtable] = [item]
        index += 1
        while index < len(items):
            following = items[index]
            if not isinstance(following, PSObject | Hashtable):
                break
            same = (type(following) is type(item)
                    and (not isinstance(item, PSObject) or not isinstance(following, PSObject)
                         or following.type_name == item.type_name))
            if not same:
                break
            run.append(following)
            index += 1
        rows = [row for member in run for row in _rows(member)]
        if view is None:
            out.append(_render_list(rows) + "\n")
            continue
        if view.group_prop:
            groups: list[tuple[Any, list[PSObject]]] = []
            for row in rows:
                key = row.get(view.group_prop)
                if groups and groups[-1][0] == key:
                    groups[-1][1].append(row)
                else:
                    groups.append((key, [row]))
            for key, members in groups:
                out.append(_group_header(view, key) + _render_table(view, members).lstrip("\n"))
            out.append("\n")
        else:
            out.append(_render_table(view, rows) + "\n")
    return "".join(out)


# --- JSON ------------------------------------------------------------------------------------

_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t", "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"}


_JSON_SPECIAL = re.compile(r'["\\<>&\'\x00-\x1f]')


def _json_escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _JSON_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _json_string(text: str) -> str:
    """A JSON string as 5.1's ConvertTo-Json writes it (``<``, ``>``, ``&``, ``'`` as \\u escapes)."""
    return '"' + _JSON_SPECIAL.sub(_json_escape, text) + '"'


def _json_value(value: Any, level: int, depth: int) -> Any:
    """Turn a PowerShell value into a tree of JSON-ready Python values (strings pre-escaped)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, EnumValue):
        return value.value
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return _Raw(_json_string(value))
    if isinstance(value, dt.datetime):
        millis = int(value.timestamp() * 1000)
        return _Raw(f'"\\/Date({millis})\\/"')
    if isinstance(value, ScriptBlock):
        return _Raw(_json_string(value.text))
    if level > depth:
        return _Raw(_json_string("System.Object[]" if isinstance(value, list | bytes)
                                 else to_string(value)))
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, list):
        return [_json_value(v, level + 1, depth) for v in value]
    if isinstance(value, Hashtable):
        return {to_string(k): _json_value(v, level + 1, depth) for k, v in value.items()}
    if isinstance(value, PSObject):
        return {name: _json_value(v, level + 1, depth) for name, v in value.items()}
    return _Raw(_json_string(to_string(value)))


@dataclass(frozen=True)
class _Raw:
    text: str


def _emit(node: Any, compress: bool, indent: int) -> str:
    if isinstance(node, _Raw):
        return node.text
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, int | float):
        return format_number(node) if isinstance(node, float) else str(node)
    pad = "" if compress else "    " * (indent + 1)
    end_pad = "" if compress else "    " * indent
    newline = "" if compress else "\n"
    if isinstance(node, list):
        if not node:
            return "[]" if compress else "[\n\n" + end_pad + "]"
        inner = ("," + newline).join(pad + _emit(v, compress, indent + 1) for v in node)
        return "[" + newline + inner + newline + end_pad + "]"
    separator = ":" if compress else ":  "
    if not node:
        return "{}" if compress else "{\n\n" + end_pad + "}"
    inner = ("," + newline).join(
        pad + _json_string(k) + separator + _emit(v, compress, indent + 1) for k, v in node.items())
    return "{" + newline + inner + newline + end_pad + "}"


def to_json(value: Any, depth: int = 2, compress: bool = False) -> str:
    """``ConvertTo-Json`` as Windows PowerShell 5.1 writes it."""
    return _emit(_json_value(value, 0, depth), compress, 0)


class JsonFormatError(ValueError):
    reason = "JsonFormatError"


def _to_powershell(value: Any) -> Any:
    if isinstance(value, dict):
        return custom_object([(k, _to_powershell(v)) for k, v in value.items()])
    if isinstance(value, list):
        return [_to_powershell(v) for v in value]
    return value


def from_json(text: str) -> Any:
    """``ConvertFrom-Json``: objects become PSCustomObjects."""
    try:
        return _to_powershell(json.loads(text))
    except json.JSONDecodeError as exc:
        fragment = text[exc.pos:exc.pos + 20].split("\n")[0] or text[:20]
        raise JsonFormatError(f"Invalid JSON primitive: {fragment}.") from None
