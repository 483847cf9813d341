"""Reading a service unit file or drop-in as systemd 252 does (systemd.syntax(7), ``config_parse``):
``[Section]`` headers, ``Key=value`` lines stripped of surrounding whitespace, ``#``/``;``
comments, a trailing backslash joining the next line (comment lines inside are skipped), and
systemd's own warnings for what it ignores. Checked against Debian's ``systemd-analyze verify``.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxyfleet.core.systemd.execenvironment import Warnings
from proxyfleet.core.systemd.systemdkeys import KNOWN_KEYS

_WHITESPACE = " \t\n\r"
_COMMENTS = "#;"


@dataclass(frozen=True)
class Assignment:
    """One ``Key=value`` systemd took from a file: where it was (the last line of a continued
    one, as systemd reports it)."""

    section: str
    key: str
    value: str
    path: str
    line: int


def parse_unit_file(text: str, path: str, warnings: Warnings) -> list[Assignment]:
    """The assignments of one unit file or drop-in, in order, for the sections of a service unit
    (``Unit``, ``Service``, ``Install``); what systemd ignores gets its warning."""
    found: list[Assignment] = []
    section: str | None = None
    ignoring_section = False
    pending = ""
    line_number = 0
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    for raw in [*lines, None]:  # None: the end of the file, ending a continuation
        line_number += 1
        if raw is None:
            if not pending:
                break
            stripped = ""
        else:
            stripped = raw.strip(_WHITESPACE)
            if pending and stripped[:1] in tuple(_COMMENTS):
                continue  # a comment inside a continued line
            if not pending and (not stripped or stripped[0] in _COMMENTS):
                continue
        if stripped.endswith("\\") and raw is not None:
            pending += stripped[:-1] + " "
            continue
        whole, pending = pending + stripped, ""
        if raw is None and not whole.strip(_WHITESPACE):
            break
        if whole.startswith("["):
            name = whole[1:-1]
            if not whole.endswith("]"):
                # systemd 252 reads no further in this file (what came before stays)
                warnings.add(path, line_number, f"Invalid section header '{whole}'")
                return found
            section = name
            ignoring_section = name not in KNOWN_KEYS
            if ignoring_section and not name.startswith("X-"):
                warnings.add(path, line_number, f"Unknown section '{name}'. Ignoring.")
            continue
        if ignoring_section:
            continue
        if section is None:
            warnings.add(path, line_number, "Assignment outside of section. Ignoring.")
            continue
        key, equals, value = whole.partition("=")
        if not equals:
            warnings.add(path, line_number, "Missing '=', ignoring line.")
            continue
        key, value = key.strip(_WHITESPACE), value.strip(_WHITESPACE)
        if key.startswith("X-"):  # the vendor-extension namespace: silently not systemd's
            continue
        if key not in KNOWN_KEYS[section]:
            warnings.add(path, line_number, f"Unknown key '{key}' in section [{section}], ignoring.")
            continue
        found.append(Assignment(section, key, value, path, line_number))
    return found
