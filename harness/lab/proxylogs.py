"""A vendor proxy's logs as the lab reads them: safely, and never quoted into reports.

Two kinds. The proxy's own output (its stdout and stderr, which the lab captures into a file of its
own, or the container engine keeps) may be quoted in an error: its end only, credentials redacted,
control characters shown as escapes (a terminal or an HTML report must not interpret them). The
files the proxy writes in ``{config_dir}`` (Squid's cache.log, access.log) are the proxy's to
fill with anything — a link to a root-only file, a FIFO — so they are only ever copied, nothing
followed and nothing but regular files, to a place of the lab's own, and named by their path.
"""

from __future__ import annotations

import tempfile
import unicodedata
from pathlib import Path, PurePosixPath

from proxyfleet.core.noproxy import redact_text
from proxyfleet.core.safefiles import Skipped, UnsafeFileError, entries, read_regular
from proxyfleet.core.secretfiles import open_private_append, write_private

QUOTED_CHARACTERS = 2000  # of the proxy's own output, in an error
LOG_LIMIT = 64 * 1024 * 1024  # bytes of one log read or copied (its end)
KEPT_PREFIX = "proxyfleet-proxy-logs-"
_KEEP_AS_IS = {"\n", "\t"}


def visible(text: str) -> str:
    """``text`` with control and format characters (escape sequences, bidirectional overrides)
    written as Python escapes, newlines and tabs kept."""
    return "".join(c if c in _KEEP_AS_IS or unicodedata.category(c) not in ("Cc", "Cf")
                   else c.encode("unicode_escape").decode("ascii") for c in text)


def quote_output(text: str, limit: int = QUOTED_CHARACTERS) -> str:
    """The end of a proxy's own output for an error message: its last ``limit`` characters, made
    ``visible`` first (so a control character cannot end a URL early and let its password past)
    and then redacted."""
    return redact_text(visible(text[-limit:].strip()))


def read_output(path: Path) -> str:
    """The end of the proxy's captured output file (the lab's own; still no link followed)."""
    try:
        return read_regular(path.parent, path.name, QUOTED_CHARACTERS * 4, tail=True).decode(errors="replace")
    except OSError:
        return ""


def _inside(config_dir: Path, path: Path) -> PurePosixPath | None:
    """``path`` relative to ``config_dir``'s parent when it is inside ``config_dir``."""
    return PurePosixPath(path.relative_to(config_dir.parent)) if path.is_relative_to(config_dir) else None


def read_log(config_dir: Path | None, path: Path) -> bytes:
    """A log's last ``LOG_LIMIT`` bytes: inside ``config_dir`` nothing below its parent is
    followed; elsewhere (a path the user gave) its directory is theirs and only the file itself
    must not be a link. Raises ``OSError`` (``UnsafeFileError`` for a link or a non-regular file)."""
    relative = _inside(config_dir, path) if config_dir is not None else None
    if config_dir is not None and relative is not None:
        return read_regular(config_dir.parent, relative, LOG_LIMIT, tail=True)
    return read_regular(path.parent, path.name, LOG_LIMIT, tail=True)


def copy_logs(config_dir: Path, into: Path, exclude: frozenset[Path] = frozenset(),
              append: bool = False) -> tuple[list[Path], list[Skipped]]:
    """Copy every ``*.log`` directly in ``config_dir`` (but ``exclude``) into ``into`` (0600 files;
    with ``append``, added to what is there); the copies, and the entries left out (links,
    non-regular files)."""
    copied: list[Path] = []
    skipped: list[Skipped] = []
    try:
        listing = entries(config_dir.parent, config_dir.name)
    except OSError:
        return copied, skipped
    for name, kind in listing:
        if not name.endswith(".log") or config_dir / name in exclude:
            continue
        if kind != "file":
            skipped.append(Skipped(PurePosixPath(name), "a symbolic link" if kind == "link" else "not a regular file"))
            continue
        try:
            data = read_regular(config_dir.parent, PurePosixPath(config_dir.name, name), LOG_LIMIT, tail=True)
        except UnsafeFileError:  # swapped since it was listed
            skipped.append(Skipped(PurePosixPath(name), "a symbolic link or not a regular file"))
            continue
        except OSError:
            continue
        target = into / name
        if append:
            with open_private_append(target) as handle:
                handle.write(data)
        else:
            write_private(target, data)
        copied.append(target)
    return copied, skipped


def kept_directory() -> Path:
    """A new directory (0700) that outlives the run, for the logs of a proxy that did not start."""
    return Path(tempfile.mkdtemp(prefix=KEPT_PREFIX))
