"""PowerShell's value model over plain Python values.

=================  ==========================================
PowerShell         Python
=================  ==========================================
``$null``          ``None``
string, int, ...   ``str``, ``int``, ``float``, ``bool``
``object[]``       ``list``
``byte[]``         ``bytes``
``DateTime``       ``datetime.datetime`` (UTC, the node's zone)
hashtable          :class:`Hashtable` (case-insensitive keys)
objects            :class:`PSObject` (case-insensitive properties)
script blocks      :class:`ScriptBlock`
=================  ==========================================
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import regex

from proxyfleet.simulators.windows.powershell.syntax import StatementBlock


class PSObject:
    """An object with ordered, case-insensitive properties and a chain of type names."""

    __slots__ = ("_props", "_shared", "display", "methods", "string_form", "type_names")

    def __init__(
        self,
        type_names: Iterable[str],
        properties: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
        *,
        display: tuple[str, ...] | None = None,
        string_form: str | None = None,
        methods: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.type_names = list(type_names)
        self._props: dict[str, tuple[str, Any]] = {}
        self._shared = False  # _props is a template's too: copied before the first write
        items = properties.items() if isinstance(properties, Mapping) else properties
        for name, value in items:
            self._props[name.lower()] = (name, value)
        self.display = display
        self.string_form = string_form
        self.methods = {k.lower(): v for k, v in (methods or {}).items()}

    @classmethod
    def copy_of(cls, template: PSObject) -> PSObject:
        """A new object with ``template``'s type names and properties (the values themselves are
        shared: for immutable ones, a cheap way to hand out many equal objects). The properties
        are copied only if the new object is written to (a look at a Root store lists ~160 such
        objects and writes to none); ``template`` itself must never be written to."""
        copy = cls.__new__(cls)
        copy.type_names = list(template.type_names)
        copy._props = template._props
        copy._shared = True
        copy.display = template.display
        copy.string_form = template.string_form
        copy.methods = template.methods
        return copy

    @property
    def type_name(self) -> str:
        return self.type_names[0]

    def has(self, name: str) -> bool:
        return name.lower() in self._props

    def get(self, name: str) -> Any:
        entry = self._props.get(name.lower())
        return None if entry is None else entry[1]

    def set(self, name: str, value: Any) -> None:
        if self._shared:
            self._props, self._shared = dict(self._props), False
        entry = self._props.get(name.lower())
        self._props[name.lower()] = (entry[0] if entry else name, value)

    def names(self) -> list[str]:
        return [name for name, _ in self._props.values()]

    def items(self) -> list[tuple[str, Any]]:
        return list(self._props.values())

    def __repr__(self) -> str:
        return f"PSObject({self.type_name}, {dict(self.items())!r})"


def custom_object(properties: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> PSObject:
    """A ``[pscustomobject]``."""
    return PSObject(["System.Management.Automation.PSCustomObject", "System.Object"], properties)


class Hashtable(MutableMapping[Any, Any]):
    """``@{}``: string keys compare case-insensitively; insertion order is kept."""

    def __init__(self, items: Iterable[tuple[Any, Any]] = (), ordered: bool = False) -> None:
        self._data: dict[Any, tuple[Any, Any]] = {}
        self.ordered = ordered
        for key, value in items:
            self[key] = value

    @staticmethod
    def _fold(key: Any) -> Any:
        return key.lower() if isinstance(key, str) else key

    def __getitem__(self, key: Any) -> Any:
        return self._data[self._fold(key)][1]

    def __setitem__(self, key: Any, value: Any) -> None:
        folded = self._fold(key)
        original = self._data[folded][0] if folded in self._data else key
        self._data[folded] = (original, value)

    def __delitem__(self, key: Any) -> None:
        del self._data[self._fold(key)]

    def __iter__(self) -> Iterator[Any]:
        return (original for original, _ in self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return self._fold(key) in self._data

    @property
    def type_name(self) -> str:
        return ("System.Collections.Specialized.OrderedDictionary" if self.ordered
                else "System.Collections.Hashtable")


@dataclass(frozen=True)
class EnumValue:
    """A .NET enum value: prints as its name, serialises to JSON as its number (PS 5.1)."""

    type_name: str
    name: str
    value: int


@dataclass
class ScriptBlock:
    body: StatementBlock
    text: str


@dataclass
class Matches:
    """Holder for ``$Matches`` after a scalar ``-match``."""

    groups: Hashtable = field(default_factory=Hashtable)


# --- type names --------------------------------------------------------------------------


def type_name_of(value: Any) -> str:
    """The full .NET type name PowerShell would report for a value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "System.Boolean"
    if isinstance(value, int):
        return "System.Int32" if -(2**31) <= value < 2**31 else "System.Int64"
    if isinstance(value, float):
        return "System.Double"
    if isinstance(value, str):
        return "System.String"
    if isinstance(value, bytes):
        return "System.Byte[]"
    if isinstance(value, list):
        return "System.Object[]"
    if isinstance(value, dt.datetime):
        return "System.DateTime"
    if isinstance(value, Hashtable | PSObject | EnumValue):
        return value.type_name
    if isinstance(value, ScriptBlock):
        return "System.Management.Automation.ScriptBlock"
    return "System.Object"


# --- conversions -------------------------------------------------------------------------


def format_number(value: int | float) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa.removesuffix('.0')}E{sign}{exponent.lstrip('+-').zfill(2)}"
    return text


def format_datetime(value: dt.datetime) -> str:
    """en-US ``DateTime.ToString()``: ``11/22/2026 7:26:20 AM``."""
    hour = value.hour % 12 or 12
    meridiem = "AM" if value.hour < 12 else "PM"
    return f"{value.month}/{value.day}/{value.year} {hour}:{value.minute:02d}:{value.second:02d} {meridiem}"


def to_string(value: Any) -> str:
    """PowerShell's string conversion (as in ``"$value"``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return format_number(value)
    if isinstance(value, list):
        return " ".join(to_string(item) for item in value)
    if isinstance(value, bytes):
        return " ".join(str(b) for b in value)
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, Hashtable):
        return value.type_name
    if isinstance(value, EnumValue):
        return value.name
    if isinstance(value, ScriptBlock):
        return value.text
    if isinstance(value, PSObject):
        if value.string_form is not None:
            return value.string_form
        if value.type_name == "System.Management.Automation.PSCustomObject":
            inner = "; ".join(f"{name}={to_string(item)}" for name, item in value.items())
            return "@{" + inner + "}"
        return value.type_name
    return str(value)


def to_bool(value: Any) -> bool:
    """PowerShell truthiness."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        return value != ""
    if isinstance(value, list):
        if not value:
            return False
        return to_bool(value[0]) if len(value) == 1 else True
    return True


class ConversionError(ValueError):
    """A value cannot be converted to the requested type."""

    def __init__(self, value: Any, type_name: str, detail: str) -> None:
        super().__init__(
            f'Cannot convert value "{to_string(value)}" to type "{type_name}". Error: "{detail}"'
        )
        self.value = value
        self.type_name = type_name


_INT = re.compile(r"\s*[+-]?(0x[0-9a-fA-F]+|\d+)\s*$")
_FLOAT = re.compile(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)\s*$")


def to_number(value: Any, type_name: str = "System.Int32") -> int | float:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, EnumValue):
        return value.value
    if isinstance(value, str):
        if value.strip() == "":
            return 0
        if _INT.match(value):
            text = value.strip()
            if len(text) <= 40:  # beyond that only a double holds it (and int() refuses 4,300 digits)
                return int(text, 16) if "x" in text.lower() else int(text)
        if _INT.match(value) or _FLOAT.match(value):
            number = float(value) if "x" not in value.lower() else float("inf")
            if number in (float("inf"), float("-inf")):
                raise ConversionError(value, type_name, "Value was either too large or too small for a Double.")
            return number
        raise ConversionError(value, type_name, "Input string was not in a correct format.")
    if isinstance(value, list) and len(value) == 1:
        return to_number(value[0], type_name)
    raise ConversionError(value, type_name,
                          f'Cannot convert the "{to_string(value)}" value of type '
                          f'"{type_name_of(value)}" to type "{type_name}".')


def enumerate_value(value: Any) -> list[Any]:
    """What a value becomes when written to a pipeline: collections unroll."""
    if isinstance(value, list):
        return value
    if isinstance(value, bytes):
        return list(value)
    return [value]


def collapse(items: list[Any]) -> Any:
    """What a pipeline's output becomes when assigned: $null, the item, or an array."""
    if not items:
        return None
    if len(items) == 1:
        return items[0]
    return items


# --- comparison ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def wildcard_regex(pattern: str) -> regex.Pattern[str]:
    """Compile a PowerShell wildcard pattern (``* ? [a-z]``, backtick escapes); remembered, as
    scripts ask for the same few patterns on every run."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "`" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char == "*":
            if not out or out[-1] != ".*":  # "**" means "*": fewer ways to backtrack
                out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            close = pattern.find("]", i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                out.append("[" + pattern[i + 1:close].replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    # the regex engine (not re) so a match can be given a time limit (operators' -like)
    return regex.compile("".join(out) + r"\Z", regex.VERSION0 | regex.DOTALL | regex.IGNORECASE)


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def equals(left: Any, right: Any, case_sensitive: bool = False) -> bool:
    """Scalar ``-eq``: the right operand is converted to the left operand's type."""
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, str):
        return _fold(left, case_sensitive) == _fold(to_string(right), case_sensitive)
    if isinstance(left, EnumValue):
        if isinstance(right, int | float) and not isinstance(right, bool):
            return left.value == right
        return left.name.casefold() == to_string(right).casefold()
    if isinstance(left, bool):
        return left == to_bool(right)
    if isinstance(left, int | float):
        try:
            return left == to_number(right)
        except ConversionError:
            return False
    if isinstance(left, dt.datetime):
        return isinstance(right, dt.datetime) and left == right
    return left is right or left == right


def compare_order(left: Any, right: Any, case_sensitive: bool = False) -> int:
    """Ordering for ``-lt``/``-gt``: -1, 0 or 1."""
    if isinstance(left, str):
        a, b = _fold(left, case_sensitive), _fold(to_string(right), case_sensitive)
    elif isinstance(left, dt.datetime) and isinstance(right, dt.datetime):
        a, b = left, right  # type: ignore[assignment]
    elif left is None:
        return 0 if right is None else -1
    else:
        a, b = to_number(left), to_number(right)  # type: ignore[assignment]
    return (a > b) - (a < b)


def dotnet_replacement(replacement: str) -> Callable[[regex.Match[str]], str]:
    """Translate a .NET ``-replace`` substitution (``$1``, ``${name}``, ``$$``)."""
    token = re.compile(r"\$(\$|\d+|\{[^}]*\}|&)")

    def substitute(match: regex.Match[str]) -> str:
        def one(sub: re.Match[str]) -> str:
            ref = sub.group(1)
            if ref == "$":
                return "$"
            if ref == "&":
                return str(match.group(0))
            name = ref.strip("{}")
            try:
                group = match.group(int(name) if name.isdigit() else name)
            except IndexError:
                return sub.group(0)
            return group or ""

        return token.sub(one, replacement)

    return substitute

