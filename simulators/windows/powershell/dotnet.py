""".NET members reachable from the PowerShell subset: type literals, casts, static and instance
members. Anything not listed fails with PowerShell's own "Unable to find type" or "does not
contain a method named" error rather than being guessed.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord
from proxyfleet.simulators.windows.powershell.values import (
    ConversionError,
    EnumValue,
    Hashtable,
    PSObject,
    ScriptBlock,
    custom_object,
    enumerate_value,
    equals,
    to_bool,
    to_number,
    to_string,
    type_name_of,
)

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.session import Session

_TYPE_ALIASES = {
    "environment": "System.Environment",
    "environmentvariabletarget": "System.EnvironmentVariableTarget",
    "convert": "System.Convert",
    "text.encoding": "System.Text.Encoding",
    "io.file": "System.IO.File",
    "io.path": "System.IO.Path",
    "string": "System.String",
    "int": "System.Int32",
    "int32": "System.Int32",
    "long": "System.Int64",
    "int64": "System.Int64",
    "double": "System.Double",
    "bool": "System.Boolean",
    "boolean": "System.Boolean",
    "array": "System.Array",
    "object": "System.Object",
    "object[]": "System.Object[]",
    "string[]": "System.String[]",
    "byte[]": "System.Byte[]",
    "char": "System.Char",
    "hashtable": "System.Collections.Hashtable",
    "collections.hashtable": "System.Collections.Hashtable",
    "datetime": "System.DateTime",
    "pscustomobject": "System.Management.Automation.PSCustomObject",
    "management.automation.pscustomobject": "System.Management.Automation.PSCustomObject",
    "psobject": "System.Management.Automation.PSObject",
    "management.automation.psobject": "System.Management.Automation.PSObject",
    "scriptblock": "System.Management.Automation.ScriptBlock",
    "void": "System.Void",
    "math": "System.Math",
}


@dataclass(frozen=True)
class TypeRef:
    """The value of a type literal such as ``[string]``."""

    full_name: str

    def __str__(self) -> str:
        return self.full_name


class DotNetError(Exception):
    """A .NET exception thrown by a member call; wrapped by the caller in PowerShell's words."""

    def __init__(self, message: str, exception: str = "ArgumentException") -> None:
        super().__init__(message)
        self.exception = exception


def resolve_type(name: str) -> str:
    """Canonical full name of a type literal, or raise PowerShell's ``TypeNotFound``."""
    key = name.strip().lower().removeprefix("system.")
    if key in _TYPE_ALIASES:
        return _TYPE_ALIASES[key]
    if f"system.{key}" in (v.lower() for v in _TYPE_ALIASES.values()):
        return next(v for v in _TYPE_ALIASES.values() if v.lower() == f"system.{key}")
    raise CommandFailure(ErrorRecord(
        message=f"Unable to find type [{name}].", error_id="TypeNotFound",
        category="InvalidOperation", exception="RuntimeException", target=name,
        target_type="TypeName"))


def type_info(full_name: str) -> PSObject:
    return PSObject(["System.RuntimeType"],
                    {"Name": full_name.rsplit(".", 1)[-1], "FullName": full_name},
                    string_form=full_name)


def _environment_target(value: Any) -> str:
    text = value.name if isinstance(value, EnumValue) else to_string(value)
    if isinstance(value, int) and not isinstance(value, bool):
        text = {0: "Process", 1: "User", 2: "Machine"}.get(value, str(value))
    for target in ("Process", "User", "Machine"):
        if text.lower() == target.lower():
            return target
    raise ConversionError(value, "System.EnvironmentVariableTarget",
                          f'Unable to match the identifier name {text} to a valid enumerator name. '
                          'Specify one of the following enumerator names and try again:\n'
                          'Process, User, Machine')


def _check_variable(name: str, value: str | None) -> None:
    if not name:
        raise DotNetError("String cannot be of zero length.\r\nParameter name: variable")
    if "=" in name or "\0" in name:
        raise DotNetError("Environment variable name cannot contain equal character.")
    if len(name) >= 255 or (value is not None and len(value) >= 32767):
        raise DotNetError("Environment variable name or value is too long.")


def _encoding(name: str) -> PSObject:
    codec = {"UTF8": "utf-8", "Unicode": "utf-16-le", "ASCII": "ascii", "UTF32": "utf-32-le",
             "BigEndianUnicode": "utf-16-be", "Default": "cp1252"}[name]

    def get_string(data: Any, *rest: Any) -> str:
        raw = data if isinstance(data, bytes) else bytes(int(to_number(b)) & 0xFF
                                                          for b in enumerate_value(data))
        return raw.decode(codec, errors="replace")

    def get_bytes(text: Any) -> bytes:
        return to_string(text).encode(codec, errors="replace")

    return PSObject([f"System.Text.{name}Encoding"], {"EncodingName": name, "WebName": codec},
                    string_form=f"System.Text.{name}Encoding",
                    methods={"GetString": get_string, "GetBytes": get_bytes})


def static_member(session: Session, type_name: str, member: str) -> Any:
    key = (type_name, member.lower())
    if type_name == "System.Environment":
        if key[1] == "machinename":
            return session.machine.settings.hostname.upper()
        if key[1] == "newline":
            return "\r\n"
        if key[1] == "username":
            return session.username
        if key[1] == "processorcount":
            return 2
        if key[1] == "is64bitoperatingsystem":
            return True
        if key[1] == "osversion":
            return PSObject(["System.OperatingSystem"],
                            {"Platform": "Win32NT",
                             "Version": session.machine.settings.os_version + ".0",
                             "VersionString": "Microsoft Windows NT "
                                              + session.machine.settings.os_version + ".0"},
                            string_form="Microsoft Windows NT "
                                        + session.machine.settings.os_version + ".0")
    if type_name == "System.EnvironmentVariableTarget":
        for index, target in enumerate(("Process", "User", "Machine")):
            if key[1] == target.lower():
                return EnumValue("System.EnvironmentVariableTarget", target, index)
    if type_name == "System.Text.Encoding" and key[1] in (
            "utf8", "unicode", "ascii", "utf32", "bigendianunicode", "default"):
        names = {"utf8": "UTF8", "unicode": "Unicode", "ascii": "ASCII", "utf32": "UTF32",
                 "bigendianunicode": "BigEndianUnicode", "default": "Default"}
        return _encoding(names[key[1]])
    if type_name == "System.DateTime" and key[1] in ("now", "utcnow"):
        return session.machine.now()
    if type_name == "System.String" and key[1] == "empty":
        return ""
    raise CommandFailure(ErrorRecord(
        message=f"The property '{member}' cannot be found on type '{type_name}'.",
        error_id="PropertyNotFound", category="InvalidOperation", exception="RuntimeException",
        target=member, target_type="String"))


# Bounded: an object's own members (an encoding's, a service's) are closures made per object.
@functools.lru_cache(maxsize=512)
def _signature(handler: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(handler)


def _overload(method: str, handler: Callable[..., Any], args: list[Any], *bound: Any) -> Any:
    """Call a member with ``args``; an argument count no overload takes is PowerShell's
    MethodCountCouldNotFindBest, decided before the member runs."""
    try:
        _signature(handler).bind(*bound, *args)
    except TypeError:
        raise CommandFailure(ErrorRecord(
            message=f'Cannot find an overload for "{method}" and the argument count: "{len(args)}".',
            error_id="MethodCountCouldNotFindBest", category="NotSpecified",
            exception="MethodException")) from None
    return handler(*bound, *args)


def invoke_static(session: Session, type_name: str, method: str, args: list[Any]) -> Any:
    """Call a static method; raises DotNetError for .NET exceptions."""
    name = method.lower()
    table: dict[str, Callable[..., Any]] = _STATIC.get(type_name, {})
    handler = table.get(name)
    if handler is None:
        raise CommandFailure(ErrorRecord(
            message=f"Method invocation failed because [{type_name}] does not contain a method "
                    f"named '{method}'.", error_id="MethodNotFound", category="InvalidOperation",
            exception="RuntimeException"))
    return _overload(method, handler, args, session)


def _set_environment_variable(session: Session, name: Any, value: Any,
                              target: Any = "Process") -> None:
    where = _environment_target(target)
    text_name = to_string(name)
    text_value = None if value is None or to_string(value) == "" else to_string(value)
    _check_variable(text_name, text_value)
    session.set_environment_variable(text_name, text_value, where)


def _get_environment_variable(session: Session, name: Any, target: Any = "Process") -> Any:
    return session.get_environment_variable(to_string(name), _environment_target(target))


def _get_environment_variables(session: Session, target: Any = "Process") -> Hashtable:
    return Hashtable(session.environment_variables(_environment_target(target)).items())


def _from_base64(session: Session, text: Any) -> bytes:
    cleaned = re.sub(r"\s", "", to_string(text))
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        raise DotNetError(
            "The input is not a valid Base-64 string as it contains a non-base 64 character, "
            "more than two padding characters, or an illegal character among the padding "
            "characters. ", "FormatException") from None


def _to_base64(session: Session, data: Any) -> str:
    raw = data if isinstance(data, bytes) else bytes(int(to_number(b)) for b in enumerate_value(data))
    return base64.b64encode(raw).decode("ascii")


def _file_path(session: Session, path: Any) -> str:
    return session.resolve_file_path(to_string(path))


def _read(session: Session, path: Any) -> bytes:
    try:
        return session.read_file(_file_path(session, path))
    except FileNotFoundError as exc:
        raise DotNetError(str(exc), "FileNotFoundException") from None


def _write(session: Session, path: Any, data: bytes) -> None:
    try:
        session.write_file(_file_path(session, path), data)
    except FileNotFoundError as exc:
        raise DotNetError(str(exc), "DirectoryNotFoundException") from None


def _read_all_text(session: Session, path: Any, *_: Any) -> str:
    return _read(session, path).decode("utf-8-sig", errors="replace")


def _write_all_text(session: Session, path: Any, text: Any, *_: Any) -> None:
    _write(session, path, to_string(text).encode("utf-8"))


def _read_all_bytes(session: Session, path: Any) -> bytes:
    return _read(session, path)


def _write_all_bytes(session: Session, path: Any, data: Any) -> None:
    raw = data if isinstance(data, bytes) else bytes(int(to_number(b)) for b in enumerate_value(data))
    _write(session, path, raw)


def _file_exists(session: Session, path: Any) -> bool:
    try:
        return session.machine.filesystem.exists(_file_path(session, path)) and \
            not session.machine.filesystem.is_dir(_file_path(session, path))
    except ValueError:
        return False


_STATIC: dict[str, dict[str, Callable[..., Any]]] = {
    "System.Environment": {
        "setenvironmentvariable": _set_environment_variable,
        "getenvironmentvariable": _get_environment_variable,
        "getenvironmentvariables": _get_environment_variables,
    },
    "System.Convert": {
        "frombase64string": _from_base64,
        "tobase64string": _to_base64,
    },
    "System.IO.File": {
        "readalltext": _read_all_text,
        "writealltext": _write_all_text,
        "readallbytes": _read_all_bytes,
        "writeallbytes": _write_all_bytes,
        "exists": _file_exists,
    },
    "System.IO.Path": {
        "combine": lambda session, *parts: "\\".join(
            to_string(p).rstrip("\\") for p in parts if to_string(p)),
        "getfilename": lambda session, p: to_string(p).replace("/", "\\").rsplit("\\", 1)[-1],
    },
    "System.String": {
        "isnullorempty": lambda session, s: s is None or to_string(s) == "",
        "isnullorwhitespace": lambda session, s: s is None or to_string(s).strip() == "",
        "join": lambda session, sep, *items: to_string(sep).join(
            to_string(i) for item in items for i in enumerate_value(item)),
    },
    "System.Math": {
        "max": lambda session, a, b: max(to_number(a), to_number(b)),
        "min": lambda session, a, b: min(to_number(a), to_number(b)),
    },
}


# --- casts ------------------------------------------------------------------------------------


def convert_to(type_name: str, value: Any) -> Any:
    """``[type]value``; raises ConversionError with PowerShell's message when it cannot."""
    full = resolve_type(type_name)
    if full == "System.String":
        return to_string(value)
    if full in ("System.Int32", "System.Int64"):
        number = to_number(value, full)
        bits = 31 if full == "System.Int32" else 63
        if (isinstance(number, float) and not math.isfinite(number)) or not -2**bits <= number < 2**bits:
            article = "an Int32" if bits == 31 else "an Int64"
            raise ConversionError(value, full, f"Value was either too large or too small for {article}.")
        return round(number) if isinstance(number, float) else number
    if full == "System.Double":
        return float(to_number(value, full))
    if full == "System.Boolean":
        return to_bool(value)
    if full in ("System.Array", "System.Object[]"):
        return [] if value is None else list(enumerate_value(value))
    if full == "System.String[]":
        return [] if value is None else [to_string(v) for v in enumerate_value(value)]
    if full == "System.Byte[]":
        if isinstance(value, bytes):
            return value
        return bytes(int(to_number(v, "System.Byte")) & 0xFF for v in enumerate_value(value))
    if full == "System.Char":
        text = to_string(value)
        if len(text) != 1:
            raise ConversionError(value, full, "String must be exactly one character long.")
        return text
    if full == "System.Collections.Hashtable":
        if isinstance(value, Hashtable):
            return value
        raise ConversionError(value, full, f'Cannot convert the "{to_string(value)}" value of type '
                                           f'"{type_name_of(value)}" to type "{full}".')
    if full == "System.DateTime":
        if isinstance(value, dt.datetime):
            return value
        try:
            parsed = dt.datetime.fromisoformat(to_string(value))
        except ValueError:
            raise ConversionError(value, full, "String was not recognized as a valid DateTime.") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    if full == "System.Management.Automation.PSCustomObject":
        if isinstance(value, Hashtable):
            return custom_object(value.items())
        return value
    if full in ("System.Management.Automation.PSObject", "System.Object", "System.Void"):
        return value
    if full == "System.Management.Automation.ScriptBlock" and isinstance(value, ScriptBlock):
        return value
    raise ConversionError(value, full, f'Cannot convert the "{to_string(value)}" value of type '
                                       f'"{type_name_of(value)}" to type "{full}".')


def is_instance(value: Any, type_name: str) -> bool:
    full = resolve_type(type_name)
    if full == "System.Object":
        return value is not None
    if full in ("System.Array", "System.Object[]"):
        return isinstance(value, list)
    if full == "System.Int32":
        return isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31
    if full == "System.Int64":
        return isinstance(value, int) and not isinstance(value, bool)
    if full == "System.Management.Automation.PSObject":
        return value is not None
    return type_name_of(value) == full


# --- instance members ------------------------------------------------------------------------


def get_member(value: Any, name: str) -> Any:
    """``$value.Name``: properties, with member enumeration over arrays. Missing is $null."""
    lowered = name.lower()
    if value is None:
        return None
    if isinstance(value, PSObject):
        if value.has(name):
            return value.get(name)
        return None
    if isinstance(value, Hashtable):
        if name in value:
            return value[name]
        if lowered == "count":
            return len(value)
        if lowered == "keys":
            return list(value.keys())
        if lowered == "values":
            return list(value.values())
        return None
    if isinstance(value, str):
        return len(value) if lowered == "length" else None
    if isinstance(value, bytes):
        return len(value) if lowered in ("length", "count") else None
    if isinstance(value, list):
        if lowered in ("count", "length"):
            return len(value)
        found = [get_member(item, name) for item in value]
        flat: list[Any] = []
        for item in found:
            if isinstance(item, list):
                flat.extend(item)
            elif item is not None:
                flat.append(item)
        return flat
    if isinstance(value, dt.datetime):
        attrs = {"year": value.year, "month": value.month, "day": value.day,
                 "hour": value.hour, "minute": value.minute, "second": value.second,
                 "millisecond": value.microsecond // 1000,
                 "ticks": int((value - dt.datetime(1, 1, 1, tzinfo=dt.UTC)).total_seconds() * 10**7),
                 "dayofweek": value.strftime("%A"), "date": value.replace(
                     hour=0, minute=0, second=0, microsecond=0)}
        return attrs.get(lowered)
    if isinstance(value, EnumValue):
        return value.value if lowered == "value__" else None
    return None


def _datetime_to_string(value: dt.datetime, fmt: Any = None) -> str:
    if fmt is None:
        from proxyfleet.simulators.windows.powershell.values import format_datetime
        return format_datetime(value)
    text = to_string(fmt)
    if text in ("o", "O"):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond * 10:07d}Z"
    if text == "s":
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if text == "u":
        return value.strftime("%Y-%m-%d %H:%M:%SZ")
    raise DotNetError(f"The simulated node supports only the 'o', 's' and 'u' DateTime formats, "
                      f"not '{text}'.", "FormatException")


def _split(text: str, *separators: Any) -> list[str]:
    chars: list[str] = []
    for sep in separators:
        chars.extend(to_string(s) for s in enumerate_value(sep))
    if not chars:
        return re.split(r"\s", text)
    pattern = "|".join(re.escape(c) for c in chars if c)
    return re.split(pattern, text) if pattern else [text]


_STRING_METHODS: dict[str, Callable[..., Any]] = {
    "trim": lambda s, chars=None: s.strip(to_string(chars)) if chars is not None else s.strip(),
    "trimend": lambda s, chars=None: s.rstrip(to_string(chars)) if chars is not None else s.rstrip(),
    "trimstart": lambda s, chars=None: s.lstrip(to_string(chars)) if chars is not None else s.lstrip(),
    "toupper": lambda s: s.upper(),
    "tolower": lambda s: s.lower(),
    "toupperinvariant": lambda s: s.upper(),
    "tolowerinvariant": lambda s: s.lower(),
    "contains": lambda s, sub: to_string(sub) in s,
    "startswith": lambda s, p, *_: s.startswith(to_string(p)),
    "endswith": lambda s, p, *_: s.endswith(to_string(p)),
    "replace": lambda s, old, new: s.replace(to_string(old), to_string(new)),
    "substring": lambda s, start, length=None: (
        s[int(to_number(start)):] if length is None
        else s[int(to_number(start)):int(to_number(start)) + int(to_number(length))]),
    "indexof": lambda s, sub, *_: s.find(to_string(sub)),
    "split": _split,
    "equals": lambda s, other: s == to_string(other),
    "tostring": lambda s, *_: s,
    "padleft": lambda s, width, char=" ": s.rjust(int(to_number(width)), to_string(char)),
    "padright": lambda s, width, char=" ": s.ljust(int(to_number(width)), to_string(char)),
    "getbytes": lambda s: s.encode("utf-8"),
}


def invoke_method(value: Any, method: str, args: list[Any]) -> Any:
    """``$value.Method(args)`` for the supported instance methods."""
    name = method.lower()
    if value is None:
        raise CommandFailure(ErrorRecord(
            message="You cannot call a method on a null-valued expression.",
            error_id="InvokeMethodOnNull", category="InvalidOperation",
            exception="RuntimeException"))
    if name == "gettype" and not args:
        return type_info(type_name_of(value))
    if isinstance(value, PSObject) and name in value.methods:
        return _overload(method, value.methods[name], args)
    if name == "tostring" and not isinstance(value, dt.datetime | str):
        return to_string(value)
    if isinstance(value, str) and name in _STRING_METHODS:
        return _overload(method, _STRING_METHODS[name], args, value)
    if isinstance(value, dt.datetime):
        if name == "tostring":
            return _datetime_to_string(value, *args)
        if name in ("touniversaltime", "tolocaltime"):
            return value
        units = {"addseconds": "seconds", "addminutes": "minutes", "addhours": "hours",
                 "adddays": "days", "addmilliseconds": "milliseconds"}
        if name in units and len(args) == 1:
            return value + dt.timedelta(**{units[name]: float(to_number(args[0]))})
    if isinstance(value, Hashtable):
        if name in ("containskey", "contains") and len(args) == 1:
            return args[0] in value
        if name == "add" and len(args) == 2:
            if args[0] in value:
                raise DotNetError(f"Item has already been added. Key in dictionary: "
                                  f"'{to_string(args[0])}'  Key being added: '{to_string(args[0])}'")
            value[args[0]] = args[1]
            return None
        if name == "remove" and len(args) == 1:
            value.pop(args[0], None)
            return None
        if name == "clear" and not args:
            value.clear()
            return None
    if isinstance(value, list) and name == "contains" and len(args) == 1:
        return any(equals(item, args[0]) for item in value)
    if isinstance(value, list) and name == "indexof" and len(args) == 1:
        return next((i for i, item in enumerate(value) if equals(item, args[0])), -1)
    raise CommandFailure(ErrorRecord(
        message=f"Method invocation failed because [{type_name_of(value)}] does not contain a "
                f"method named '{method}'.", error_id="MethodNotFound",
        category="InvalidOperation", exception="RuntimeException"))
