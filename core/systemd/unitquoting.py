"""How systemd splits a unit file setting's value into words: quotes anywhere in a word, C-style
escapes inside and outside them (systemd.syntax(7), "Quoting"; ``extract_first_word`` with
``EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE``, as ``Environment=`` uses it in systemd 252).

What the documentation does not say and the implementation does, checked against Debian's
``systemd-analyze verify`` (252): a quote may open and close in the middle of a word
(``K=a"b c"d`` is ``K=ab cd``), escapes work inside single quotes too, and an unknown escape
(``\\q``, ``\\=``) or an unbalanced quote makes the rest of the line invalid.
"""

from __future__ import annotations

WHITESPACE = " \t\n\r"

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'", "s": " "}
_HEX = "0123456789abcdefABCDEF"
_OCTAL = "01234567"


class QuotingError(ValueError):
    """An invalid escape sequence or an unbalanced quote: systemd ignores what is left of the line."""


def unescape_one(text: str, at: int) -> tuple[str, int]:
    """The character the escape starting at ``text[at]`` (just after the backslash) stands for,
    and how many characters it took (systemd's ``cunescape_one``)."""
    if at >= len(text):
        raise QuotingError("a trailing backslash")
    c = text[at]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], 1
    for marker, digits in (("x", 2), ("u", 4), ("U", 8)):
        if c == marker:
            code = text[at + 1:at + 1 + digits]
            if len(code) != digits or any(d not in _HEX for d in code):
                raise QuotingError(f"\\{marker} needs {digits} hex digits")
            value = int(code, 16)
            if value == 0 or value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise QuotingError(f"\\{marker}{code} is not a character systemd accepts")
            return _byte_or_char(value, marker == "x"), 1 + digits
    if c in _OCTAL:
        code = text[at:at + 3]
        if len(code) != 3 or any(d not in _OCTAL for d in code) or code[0] > "3":  # one byte at most
            raise QuotingError("an octal escape is three digits, at most \\377")
        value = int(code, 8)
        if value == 0:
            raise QuotingError("\\000 is not allowed")
        return _byte_or_char(value, True), 3
    raise QuotingError(f"unknown escape \\{c}")


def _byte_or_char(value: int, byte: bool) -> str:
    """``\\x`` and octal escapes are one byte each, not a character: past ASCII that byte alone is
    not UTF-8, kept as Python's surrogate escape of it (``os.fsdecode`` does the same)."""
    return chr(0xDC00 + value) if byte and value >= 0x80 else chr(value)


def split_words(value: str) -> list[str]:
    """Every word of ``value``: quotes removed, escapes resolved; ``QuotingError`` if systemd
    cannot read one of them."""
    words, error = words_before_error(value)
    if error is not None:
        raise error
    return words


def words_before_error(value: str) -> tuple[list[str], QuotingError | None]:
    """The words systemd reads from ``value`` up to the first it cannot, and that error (None:
    the whole value was read). A setting like ``Environment=`` keeps the words before the error."""
    words: list[str] = []
    i, n = 0, len(value)
    while True:
        while i < n and value[i] in WHITESPACE:
            i += 1
        if i >= n:
            return words, None
        word: list[str] = []
        quote = ""
        while i < n:
            c = value[i]
            if c == "\\":
                try:
                    char, used = unescape_one(value, i + 1)
                except QuotingError as exc:
                    return words, exc
                word.append(char)
                i += 1 + used
            elif quote:
                if c == quote:
                    quote = ""
                else:
                    word.append(c)
                i += 1
            elif c in "'\"":
                quote = c
                i += 1
            elif c in WHITESPACE:
                break
            else:
                word.append(c)
                i += 1
        if quote:
            return words, QuotingError("unbalanced quoting")
        words.append("".join(word))
