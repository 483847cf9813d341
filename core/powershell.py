"""Windows PowerShell 5.1's quoting, for the one place a value is written into a script as a
literal (a traffic probe's URL or image): which characters PowerShell takes for a single quote,
and a literal built from them. The simulated nodes' lexer reads the same set."""

from __future__ import annotations

# ' and the typographic quotes PowerShell also takes for one (U+2018 to U+201B)
SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
# " and the typographic double quotes (U+201C to U+201E)
DOUBLE_QUOTES = '"\u201c\u201d\u201e'


def powershell_literal(value: str) -> str:
    """``value`` as a PowerShell single-quoted string (no expansion inside: ``$``, backticks and
    ``"`` are plain characters). Every character PowerShell takes for ``'`` is doubled: quoting
    only ``'`` could be broken out of with U+2019."""
    return "'" + "".join(c * 2 if c in SINGLE_QUOTES else c for c in value) + "'"
