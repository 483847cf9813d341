"""The environment systemd 252 gives a service's processes: ``Environment=`` settings (quoted
words, specifiers), ``EnvironmentFile=`` paths, and the files' contents (shell-like, no
specifiers), files overriding settings, a later assignment overriding an earlier one.

Warnings are systemd's own, word for word (checked against Debian's ``systemd-analyze verify``,
252): a reconciler's mistake shows up on the node as it would in its journal. They quote the
assignment, value included, as systemd does: whoever shows them outside the node redacts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from proxyfleet.core.systemd.specifiers import SpecifierContext, SpecifierError, expand
from proxyfleet.core.systemd.unitquoting import words_before_error

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# sysconf(_SC_ARG_MAX) on Linux with the default 8 MiB stack: a quarter of it.
ARG_MAX = 2 * 1024 * 1024


def name_is_valid(name: str) -> bool:
    """systemd's ``env_name_is_valid``: letters, digits and ``_``, not starting with a digit."""
    return (0 < len(name) <= ARG_MAX - 2 and not name[0].isdigit()
            and all(c in _NAME_CHARS for c in name))


def value_is_valid(value: str) -> bool:
    """systemd's ``env_value_is_valid``: UTF-8 (control characters are allowed; a lone byte from
    a ``\\x`` or octal escape is not UTF-8), not too long."""
    return _utf8(value) and len(value.encode()) <= ARG_MAX - 3


def assignment_is_valid(assignment: str) -> bool:
    name, equals, value = assignment.partition("=")
    return bool(equals) and name_is_valid(name) and value_is_valid(value)


@dataclass
class Warnings:
    """systemd's log lines about one unit's settings, each ``path:line: message``."""

    lines: list[str] = field(default_factory=list)

    def add(self, path: str, line: int, message: str) -> None:
        self.lines.append(f"{path}:{line}: {message}")


def environment_setting(value: str, context: SpecifierContext, env: dict[str, str],
                        warnings: Warnings, path: str, line: int) -> None:
    """Apply one ``Environment=`` line to ``env`` (in place), as ``config_parse_environ`` does:
    empty resets it; each word is unquoted, its specifiers expanded and, if a valid assignment,
    set (a later one replaces an earlier one); a bad word is skipped, and a quoting error ends the
    line (the words before it are kept)."""
    if not value.strip():
        env.clear()
        return
    words, error = words_before_error(value)
    for word in words:
        try:
            resolved = expand(word, context)
        except SpecifierError as exc:
            warnings.add(path, line, f"Failed to resolve specifiers in {word}, ignoring: {exc}")
            continue
        if not assignment_is_valid(resolved):
            warnings.add(path, line, f"Invalid environment assignment, ignoring: {resolved}")
            continue
        name, _, assigned = resolved.partition("=")
        env[name] = assigned
    if error is not None:
        warnings.add(path, line, f"Invalid syntax, ignoring: {value}")


@dataclass(frozen=True)
class EnvironmentFileRef:
    """One ``EnvironmentFile=`` entry: the path, and whether a missing file is fine (``-``)."""

    path: str
    optional: bool


def environment_file_setting(value: str, context: SpecifierContext, files: list[EnvironmentFileRef],
                             warnings: Warnings, path: str, line: int) -> None:
    """Apply one ``EnvironmentFile=`` line to ``files`` (in place): empty resets the list; the
    path's specifiers are expanded (the file's contents never are); it must be absolute."""
    value = value.strip()
    if not value:
        files.clear()
        return
    try:
        resolved = expand(value, context)
    except SpecifierError as exc:
        warnings.add(path, line, f"Failed to resolve unit specifiers in '{value}', ignoring: {exc}")
        return
    optional = resolved.startswith("-")
    target = resolved[1:] if optional else resolved
    if not target.startswith("/"):
        warnings.add(path, line, f"EnvironmentFile= path is not absolute, ignoring: {resolved}")
        return
    files.append(EnvironmentFileRef(target, optional))


class EnvironmentFileError(ValueError):
    """A file systemd cannot load (the service does not start)."""


_WHITESPACE = " \t\n\r"
_NEWLINE = "\n\r"
_COMMENTS = "#;"
_SHELL_NEED_ESCAPE = '"\\`$'


def parse_environment_file(text: str, path: str) -> list[tuple[str, str, int]]:
    """The (name, value, line) assignments of an environment file, in order, as systemd 252's
    ``parse_env_file_internal`` reads them: ``#``/``;`` comments (a comment ending in a backslash
    swallows the next line, before systemd 254), unquoted values with shell backslash rules and
    interior whitespace kept, ``'…'`` verbatim, ``"…"`` with ``\\"``, ``\\\\``, ``\\``` and
    ``\\$`` unescaped, a line without ``=`` ignored. No specifier is expanded. Names are not
    checked here (``load_environment_file`` does)."""
    found: list[tuple[str, str, int]] = []
    state = "pre_key"
    key: list[str] = []
    value: list[str] | None = None
    key_trailing: int | None = None
    value_trailing: int | None = None
    line = 1

    def push() -> None:
        name = "".join(key[:key_trailing] if key_trailing is not None else key)
        if value is None:
            found.append((name, "", line))
            return
        chars = value[:value_trailing] if state == "value" and value_trailing is not None else value
        found.append((name, "".join(chars), line))

    for c in text:
        if state == "pre_key":
            if c in _COMMENTS:
                state = "comment"
            elif c not in _WHITESPACE:
                state, key, key_trailing = "key", [c], None
        elif state == "key":
            if c in _NEWLINE:
                state, key = "pre_key", []
                line += 1
            elif c == "=":
                state, value, value_trailing = "pre_value", None, None
            else:
                if c not in _WHITESPACE:
                    key_trailing = None
                elif key_trailing is None:
                    key_trailing = len(key)
                key.append(c)
        elif state == "pre_value":
            if c in _NEWLINE:
                line += 1
                push()
                state, key, value = "pre_key", [], None
            elif c == "'":
                state, value = "single", value if value is not None else []
            elif c == '"':
                state, value = "double", value if value is not None else []
            elif c == "\\":
                state, value = "value_escape", value if value is not None else []
            elif c not in _WHITESPACE:
                state, value = "value", (value or []) + [c]
        elif state == "value":
            assert value is not None
            if c in _NEWLINE:
                line += 1
                push()
                state, key, value = "pre_key", [], None
            elif c == "\\":
                state, value_trailing = "value_escape", None
            else:
                if c not in _WHITESPACE:
                    value_trailing = None
                elif value_trailing is None:
                    value_trailing = len(value)
                value.append(c)
        elif state == "value_escape":
            assert value is not None
            state = "value"
            if c not in _NEWLINE:  # an escaped newline is eaten whole
                value.append(c)
        elif state == "single":
            assert value is not None
            if c == "'":
                state = "pre_value"
            else:
                value.append(c)
        elif state == "double":
            assert value is not None
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                value.append(c)
        elif state == "double_escape":
            assert value is not None
            state = "double"
            if c in _SHELL_NEED_ESCAPE:
                value.append(c)
            elif c != "\n":
                value += ["\\", c]
        elif state == "comment":
            if c == "\\":
                state = "comment_escape"
            elif c in _NEWLINE:
                state = "pre_key"
                line += 1
        elif state == "comment_escape":
            state = "comment"
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        push()
    return found


def load_environment_file(text: str, path: str, warnings: Warnings) -> dict[str, str]:
    """What one environment file contributes to a service's environment (systemd's
    ``load_env_file`` and the exec-time clean-up): invalid assignments are dropped with systemd's
    warning, a later one replaces an earlier one."""
    env: dict[str, str] = {}
    for name, value, line in parse_environment_file(text, path):
        # Invalid UTF-8 (a file read with surrogateescape) fails the whole file, as in systemd.
        if not _utf8(name):
            raise EnvironmentFileError(f"{path}:{line}: invalid UTF-8 in key '{name}', ignoring.")
        if not _utf8(value):
            raise EnvironmentFileError(f"{path}:{line}: invalid UTF-8 value for key {name}: '{value}', ignoring.")
        if not assignment_is_valid(f"{name}={value}"):
            warnings.lines.append(f"Ignoring invalid environment assignment '{name}={value}': {path}")
            continue
        env[name] = value
    return env


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def service_environment(settings: dict[str, str], files: Iterable[tuple[EnvironmentFileRef, str | None]],
                        warnings: Warnings) -> dict[str, str]:
    """A service's environment at start: its ``Environment=`` settings (``settings``), then each
    ``EnvironmentFile=`` in order (its text, None when missing), a file overriding the settings and
    the files before it. A missing file that is not optional fails the start
    (``EnvironmentFileError``)."""
    env = dict(settings)
    for ref, text in files:
        if text is None:
            if ref.optional:
                continue
            raise EnvironmentFileError("Failed to load environment files: No such file or directory")
        env.update(load_environment_file(text, ref.path, warnings))
    return env
