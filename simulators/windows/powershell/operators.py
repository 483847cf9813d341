"""PowerShell's operators over the value model (pure functions)."""

from __future__ import annotations

import re
from typing import Any

import regex

from proxyfleet.simulators.windows.powershell.budgets import (
    MAX_ELEMENTS,
    REGEX_SECONDS,
    check_elements,
    check_string,
    regex_timeout,
)
from proxyfleet.simulators.windows.powershell.dotnet import TypeRef, convert_to, is_instance
from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord
from proxyfleet.simulators.windows.powershell.values import (
    ConversionError,
    Hashtable,
    compare_order,
    dotnet_replacement,
    enumerate_value,
    equals,
    to_bool,
    to_number,
    to_string,
    wildcard_regex,
)


def _runtime_error(message: str, error_id: str) -> CommandFailure:
    return CommandFailure(ErrorRecord(message=message, error_id=error_id,
                                      category="InvalidOperation", exception="RuntimeException"))


def dotnet_regex(pattern: str, case_sensitive: bool) -> regex.Pattern[str]:
    """Compile a .NET regular expression (the common subset) with the ``regex`` engine, which,
    unlike ``re``, can give up after a time limit (see ``budgets``)."""
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", pattern).replace(r"\z", r"\Z")
    try:
        return regex.compile(translated, regex.VERSION0 | (0 if case_sensitive else regex.IGNORECASE))
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise _runtime_error(
            f'The regular expression pattern {pattern} is not valid.', "InvalidRegularExpression"
        ) from exc


def _timed(operation: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one regex operation within the regex time budget."""
    try:
        return operation(*args, timeout=REGEX_SECONDS, **kwargs)
    except TimeoutError:
        raise regex_timeout() from None


def _arithmetic(op: str, left: Any, right: Any) -> Any:
    try:
        a, b = to_number(left), to_number(right)
    except ConversionError as exc:
        raise _runtime_error(str(exc), "InvalidCastFromStringToDoubleOrSingle") from None
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise _runtime_error("Attempted to divide by zero.", "RuntimeException")
    if op == "/":
        if isinstance(a, int) and isinstance(b, int) and a % b == 0:
            return a // b
        return a / b
    return a % b if isinstance(a, int) and isinstance(b, int) else a - b * int(a / b)


def add(left: Any, right: Any) -> Any:
    if left is None:
        return right
    if isinstance(left, str):
        addition = to_string(right)
        check_string(len(left) + len(addition))
        return left + addition
    if isinstance(left, list):
        check_elements(len(left) + (len(right) if isinstance(right, list) else 1))
        return left + (right if isinstance(right, list) else [right])
    if isinstance(left, Hashtable):
        if not isinstance(right, Hashtable):
            raise _runtime_error("A hash table can only be added to another hash table.",
                                 "AddHashTableToNonHashTable")
        merged = Hashtable(left.items())
        for key, value in right.items():
            if key in merged:
                raise _runtime_error(
                    f"Item has already been added. Key in dictionary: '{to_string(key)}'  Key "
                    f"being added: '{to_string(key)}'", "HashTableAddDuplicateKey")
            merged[key] = value
        return merged
    return _arithmetic("+", left, right)


def multiply(left: Any, right: Any) -> Any:
    if isinstance(left, str | list):
        count = max(int(to_number(right)), 0)
        if isinstance(left, str):
            check_string(len(left) * count)  # before allocating: 'a' * 200000000
        else:
            check_elements(len(left) * count)
        return left * count
    return _arithmetic("*", left, right)


def format_operator(template: Any, arguments: Any) -> str:
    """``"{0} {1}" -f a, b`` (.NET composite formatting, without format strings)."""
    values = enumerate_value(arguments)
    text = to_string(template)

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) in ("{{", "}}"):
            return match.group(0)[0]
        index = int(match.group(1))
        if index >= len(values):
            raise _runtime_error(
                'Error formatting a string: Index (zero based) must be greater than or equal to '
                'zero and less than the size of the argument list..', "FormatError")
        rendered = to_string(values[index])
        width = int(match.group(2)) if match.group(2) else 0
        return rendered.rjust(width) if width >= 0 else rendered.ljust(-width)

    return re.sub(r"\{\{|\}\}|\{(\d+)(?:,(-?\d+))?(?::[^}]*)?\}", substitute, text)


def _scalar_compare(op: str, left: Any, right: Any, case_sensitive: bool) -> tuple[bool, Any]:
    """Returns (result, matches) for one left-hand value."""
    if op == "-eq":
        return equals(left, right, case_sensitive), None
    if op == "-ne":
        return not equals(left, right, case_sensitive), None
    if op in ("-gt", "-ge", "-lt", "-le"):
        try:
            order = compare_order(left, right, case_sensitive)
        except ConversionError as exc:
            raise _runtime_error(str(exc), "ComparisonFailure") from None
        return {"-gt": order > 0, "-ge": order >= 0, "-lt": order < 0, "-le": order <= 0}[op], None
    if op in ("-like", "-notlike"):
        pattern = wildcard_regex(to_string(right))
        if case_sensitive:
            pattern = regex.compile(pattern.pattern, regex.VERSION0 | regex.DOTALL)
        hit = _timed(pattern.match, to_string(left)) is not None
        return hit if op == "-like" else not hit, None
    if op in ("-match", "-notmatch"):
        match = _timed(dotnet_regex(to_string(right), case_sensitive).search, to_string(left))
        groups = None
        if match is not None:
            groups = Hashtable()
            groups[0] = match.group(0)
            for index, value in enumerate(match.groups(), start=1):
                if value is not None:
                    groups[index] = value
            for name, value in match.groupdict().items():
                if value is not None:
                    groups[name] = value
        hit = match is not None
        return (hit if op == "-match" else not hit), groups
    raise _runtime_error(f"The operator '{op}' is not supported.", "OperatorNotSupported")


def compare(op: str, left: Any, right: Any) -> tuple[Any, Hashtable | None]:
    """Comparison operators; returns (value, $Matches to set or None)."""
    case_sensitive = op.startswith("-c") and op not in ("-contains",)
    base = "-" + op[2:] if case_sensitive else op
    if base in ("-contains", "-notcontains", "-in", "-notin"):
        collection, item = (left, right) if base in ("-contains", "-notcontains") else (right, left)
        found = any(equals(member, item, case_sensitive) for member in enumerate_value(collection))
        return (found if base in ("-contains", "-in") else not found), None
    if isinstance(left, list):
        kept = [item for item in left if _scalar_compare(base, item, right, case_sensitive)[0]]
        return kept, None
    result, groups = _scalar_compare(base, left, right, case_sensitive)
    return result, groups if base == "-match" and result else None


def replace(op: str, left: Any, right: Any) -> Any:
    parts = right if isinstance(right, list) else [right]
    if len(parts) > 2:
        raise _runtime_error(
            "The -replace operator allows only two elements to follow it, not "
            f"{len(parts)}.", "BadReplaceArgument")
    pattern = dotnet_regex(to_string(parts[0]), op == "-creplace")
    replacement = to_string(parts[1]) if len(parts) > 1 else ""
    substitute = dotnet_replacement(replacement)

    def one(text: str) -> str:
        # each character can at most become one replacement (plus one at the end)
        check_string((len(text) + 1) * max(len(replacement), 1))
        return str(_timed(pattern.sub, substitute, text))

    if isinstance(left, list):
        return [one(to_string(item)) for item in left]
    return one(to_string(left))


def split(op: str, left: Any, right: Any) -> list[str]:
    parts = right if isinstance(right, list) else [right]
    pattern = dotnet_regex(to_string(parts[0]), op == "-csplit")
    limit = int(to_number(parts[1])) if len(parts) > 1 else 0
    out: list[str] = []
    for item in enumerate_value(left):
        out.extend(_timed(pattern.split, to_string(item), maxsplit=max(limit - 1, 0)))
    return out


def binary(op: str, left: Any, right: Any) -> tuple[Any, Hashtable | None]:
    """Every binary operator except the short-circuiting ``-and``/``-or``."""
    if op == "+":
        return add(left, right), None
    if op == "*":
        return multiply(left, right), None
    if op in ("-", "/", "%"):
        return _arithmetic(op, left, right), None
    if op == "-f":
        return format_operator(left, right), None
    if op == "..":
        start, stop = int(to_number(left)), int(to_number(right))
        if abs(stop - start) >= MAX_ELEMENTS:
            raise _runtime_error("The range is too large for the simulated node.", "RangeTooLarge")
        step = 1 if stop >= start else -1
        return list(range(start, stop + step, step)), None
    if op in ("-replace", "-creplace"):
        return replace(op, left, right), None
    if op in ("-split", "-csplit"):
        return split(op, left, right), None
    if op == "-join":
        parts = [to_string(item) for item in enumerate_value(left)]
        separator = to_string(right)
        check_string(sum(map(len, parts)) + len(separator) * max(len(parts) - 1, 0))
        return separator.join(parts), None
    if op in ("-is", "-isnot"):
        result = is_instance(left, right.full_name if isinstance(right, TypeRef) else to_string(right))
        return (result if op == "-is" else not result), None
    if op == "-as":
        target = right.full_name if isinstance(right, TypeRef) else to_string(right)
        try:
            return convert_to(target, left), None
        except ConversionError:
            return None, None
    if op == "-xor":
        return to_bool(left) != to_bool(right), None
    if op in ("-band", "-bor", "-bxor"):
        a, b = int(to_number(left)), int(to_number(right))
        return {"-band": a & b, "-bor": a | b, "-bxor": a ^ b}[op], None
    return compare(op, left, right)


def unary(op: str, operand: Any) -> Any:
    if op in ("-not", "!"):
        return not to_bool(operand)
    if op == "-":
        try:
            return -to_number(operand)
        except ConversionError as exc:
            raise _runtime_error(str(exc), "InvalidCastFromStringToDoubleOrSingle") from None
    if op == "+":
        return to_number(operand)
    if op == "-join":
        return "".join(to_string(item) for item in enumerate_value(operand))
    if op == "-split":
        return [part for item in enumerate_value(operand) for part in to_string(item).split()]
    if op == "-bnot":
        return ~int(to_number(operand))
    raise _runtime_error(f"The unary operator '{op}' is not supported.", "OperatorNotSupported")

