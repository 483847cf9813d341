"""Character classes and the context-free pieces of PowerShell's tokenizer.

PowerShell tokenizes differently in expression mode and in argument (command) mode, so the
parser drives scanning; this module holds what does not depend on the mode: quotes (including
the typographic quotes and dashes PowerShell accepts), numbers, variable names, operators.
"""

from __future__ import annotations

import re

from proxyfleet.core.powershell import DOUBLE_QUOTES, SINGLE_QUOTES

# PowerShell treats these typographic characters exactly like their ASCII counterparts.
# That matters for injection safety: a value quoted by doubling only ASCII "'" can be
# broken out of with U+2019.
DASHES = "-\u2013\u2014\u2015"
QUOTES = SINGLE_QUOTES + DOUBLE_QUOTES
NEWLINES = "\r\n"
SPACES = " \t\f\v\u00a0\ufeff"

BACKTICK_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}

# Characters that end a generic (bareword) token in argument mode.
GENERIC_TERMINATORS = set(SPACES + NEWLINES + ";|&(){},<>")

COMPARISON_OPERATORS = {
    "eq", "ne", "gt", "ge", "lt", "le",
    "like", "notlike", "match", "notmatch",
    "contains", "notcontains", "in", "notin",
    "replace",
}
OPERATOR_WORDS = (
    {op for base in COMPARISON_OPERATORS for op in (base, "i" + base, "c" + base)}
    | {"is", "isnot", "as", "split", "isplit", "csplit", "join", "f",
       "and", "or", "xor", "not", "band", "bor", "bxor", "bnot", "shl", "shr"}
)

_NUMBER = re.compile(
    r"(?P<hex>0x[0-9a-fA-F]+)|(?P<dec>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"(?P<suffix>[lLdD])?(?P<mult>[kKmMgGtTpP][bB])?"
)
_MULTIPLIERS = {"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}
_VARIABLE_SCOPES = {"env", "script", "global", "local", "private", "using", "variable"}


def is_dash(char: str) -> bool:
    return char != "" and char in DASHES


def is_name_char(char: str) -> bool:
    return char != "" and (char.isalnum() or char == "_")


def scan_number(text: str, pos: int) -> tuple[int | float, int] | None:
    """Scan a numeric literal at ``pos``; return (value, end) or None."""
    match = _NUMBER.match(text, pos)
    if match is None:
        return None
    value: int | float
    if match.group("hex"):
        value = int(match.group("hex"), 16)
    else:
        digits = match.group("dec")
        suffix = (match.group("suffix") or "").lower()
        is_float = suffix == "d" or "." in digits or "e" in digits.lower()
        value = float(digits) if is_float else int(digits)
    if match.group("mult"):
        value = value * _MULTIPLIERS[match.group("mult").lower()]
    return value, match.end()


def scan_variable_name(text: str, pos: int) -> tuple[str, str, int] | None:
    """Scan a variable reference whose ``$`` is at ``pos``.

    Returns (scope, name, end) or None when ``$`` is not followed by a name.
    """
    i = pos + 1
    if i >= len(text):
        return None
    char = text[i]
    if char == "{":
        close = text.find("}", i + 1)
        if close == -1:
            return None
        inner = text[i + 1 : close]
        scope, _, name = inner.rpartition(":") if ":" in inner else ("", "", inner)
        return scope.lower(), name, close + 1
    if char in "?$^":
        return "", char, i + 1
    if not is_name_char(char):
        return None
    end = i
    while end < len(text) and is_name_char(text[end]):
        end += 1
    name = text[i:end]
    if (
        end + 1 < len(text)
        and text[end] == ":"
        and name.lower() in _VARIABLE_SCOPES
        and is_name_char(text[end + 1])
    ):
        start = end + 1
        end = start
        while end < len(text) and is_name_char(text[end]):
            end += 1
        return name.lower(), text[start:end], end
    return "", name, end


def operator_word(text: str, pos: int) -> tuple[str, int] | None:
    """Recognise ``-eq``-style operators at ``pos`` (which holds a dash)."""
    end = pos + 1
    while end < len(text) and text[end].isalpha():
        end += 1
    word = text[pos + 1 : end].lower()
    if word in OPERATOR_WORDS and (end >= len(text) or not is_name_char(text[end])):
        return "-" + word, end
    return None
