"""The node's ``C:`` drive, kept as a plain directory tree on the host so a person can look.

Windows paths (``C:\\k\\ca-bundle.crt``, ``C:/k/x``, ``/C:/k/x`` as SFTP clients send them,
``\\k\\x``, relative paths) are normalised, ``..`` can never leave the drive, and names match
case-insensitively like NTFS does while keeping the case they were created with.

Every failure is an ``OSError`` carrying .NET's message about the *Windows* path — never the host
path, which would leak the lab's layout into a node's error output. The drive root and the
operating system's folders (``PROTECTED``) cannot be deleted, as TrustedInstaller-owned and
in-use files cannot on a real host; what else a recursive delete reaches goes.
"""

from __future__ import annotations

import errno
import functools
import os
import re
from pathlib import Path

_INVALID_NAME = re.compile(r'[<>:"|?*\x00-\x1f]')
# Owned by TrustedInstaller, with everything inside: a delete is refused.
PROTECTED = ("C:\\Windows", "C:\\Program Files", "C:\\Program Files (x86)")


def access_denied(path: str) -> PermissionError:
    return PermissionError(f"Access to the path '{path}' is denied.")


def _windows_error(exc: OSError, path: str) -> OSError:
    """The .NET exception a Windows host would raise instead of ``exc`` (host path dropped)."""
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EISDIR):
        return access_denied(path)
    if exc.errno == errno.ENOENT:
        return FileNotFoundError(f"Could not find a part of the path '{path}'.")
    if exc.errno == errno.ENAMETOOLONG:
        return OSError("The specified path, file name, or both are too long. The fully qualified file "
                       "name must be less than 260 characters, and the directory name must be less "
                       "than 248 characters.")
    if exc.errno == errno.ENOSPC:
        return OSError("There is not enough space on the disk.")
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return FileExistsError(f"Cannot create '{path}' because a file or directory with the same name "
                               "already exists.")
    return OSError(f"The request could not be performed because of an I/O device error. ('{path}')")


def is_protected(path: str) -> bool:
    """The drive root, ``C:\\Users`` and the profile folders in it (held open while their users
    are logged on), or anything inside a TrustedInstaller-owned folder."""
    folded = normalize(path).casefold()
    parts = folded.split("\\")
    if folded == "c:\\" or (parts[1:2] == ["users"] and len(parts) <= 3):
        return True
    return any(folded == p.casefold() or folded.startswith(p.casefold() + "\\") for p in PROTECTED)


class WindowsPathError(ValueError):
    """A path that Windows itself would reject."""

    reason = "WindowsPathError"


class DriveNotFound(WindowsPathError):
    reason = "DriveNotFound"

    def __init__(self, drive: str) -> None:
        super().__init__(f"Cannot find drive. A drive with the name '{drive}' does not exist.")
        self.drive = drive


@functools.lru_cache(maxsize=8192)
def normalize(path: str, cwd: str = "C:\\") -> str:
    """Canonical absolute form ``C:\\dir\\file`` (no trailing separator except the root).
    Pure, and asked for the same paths over and over: cached."""
    text = path.replace("/", "\\")
    if re.match(r"^\\[A-Za-z]:", text):  # /C:/k/x as OpenSSH's SFTP server shows it
        text = text[1:]
    if len(text) >= 2 and text[1] == ":" and text[0].isalpha():
        drive, rest = text[0].upper(), text[2:]
        if drive != "C":
            raise DriveNotFound(drive)
        parts = rest.split("\\")
        if not rest.startswith("\\"):  # "C:foo" is relative to the drive's current directory
            parts = normalize(cwd).split("\\")[1:] + parts
    elif text.startswith("\\"):
        parts = text.split("\\")
    else:
        parts = normalize(cwd).split("\\")[1:] + text.split("\\")
    resolved: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        stripped = part.rstrip(" .")  # Win32 drops trailing dots and spaces
        if _INVALID_NAME.search(stripped) or not stripped:
            raise WindowsPathError(f"Illegal characters in path '{path}'.")
        resolved.append(stripped)
    return "C:\\" + "\\".join(resolved)


def _entry_named(directory: str | Path, name: str) -> str | None:
    """The name of ``directory``'s entry that is ``name`` in any case, as NTFS matches names."""
    folded = name.casefold()
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.casefold() == folded:
                return entry.name
    return None


class WindowsFilesystem:
    """Maps the node's ``C:`` drive onto ``<root>/C`` on the host."""

    def __init__(self, root: Path) -> None:
        self.root = root / "C"
        self.root.mkdir(parents=True, exist_ok=True)

    def host_path(self, windows_path: str) -> Path:
        """Host path of a canonical Windows path, matching existing names case-insensitively."""
        parts = normalize(windows_path).split("\\")[1:]
        exact = os.path.join(self.root, *parts)
        if os.path.lexists(exact):  # written with the case it was created with: one stat
            return Path(exact)
        parent = os.path.dirname(exact)
        if os.path.isdir(parent):  # only the last name may differ in case (a new file's, mostly)
            return Path(parent, _entry_named(parent, parts[-1]) or parts[-1])
        current = self.root
        for part in parts:
            candidate = current / part
            if not candidate.exists() and current.is_dir():
                candidate = current / (_entry_named(current, part) or part)
            current = candidate
        return current

    def windows_path(self, host: Path) -> str:
        relative = host.relative_to(self.root)
        return "C:\\" + "\\".join(relative.parts)

    def exists(self, path: str) -> bool:
        try:
            return self.host_path(path).exists()
        except OSError:  # a name the host cannot even look up (too long) does not exist
            return False

    def is_dir(self, path: str) -> bool:
        try:
            return self.host_path(path).is_dir()
        except OSError:
            return False

    def read_bytes(self, path: str) -> bytes:
        shown = normalize(path)
        try:
            target = self.host_path(shown)
            if target.is_dir():
                raise access_denied(shown)
            if not target.exists():
                raise FileNotFoundError(f"Could not find file '{shown}'.")
            return target.read_bytes()
        except (PermissionError, FileNotFoundError) as exc:
            if exc.filename is None:  # already in Windows' words
                raise
            raise _windows_error(exc, shown) from None
        except OSError as exc:
            raise _windows_error(exc, shown) from None

    def write_bytes(self, path: str, data: bytes) -> None:
        shown = normalize(path)
        try:
            target = self.host_path(shown)
            if target.is_dir():
                raise access_denied(shown)
            if not target.parent.is_dir():
                raise FileNotFoundError(f"Could not find a part of the path '{shown}'.")
            target.write_bytes(data)
        except (PermissionError, FileNotFoundError) as exc:
            if exc.filename is None:
                raise
            raise _windows_error(exc, shown) from None
        except OSError as exc:
            raise _windows_error(exc, shown) from None

    def mkdir(self, path: str) -> None:
        shown = normalize(path)
        try:
            self.host_path(shown).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _windows_error(exc, shown) from None

    def remove(self, path: str, recurse: bool = False) -> list[str]:
        """Delete a file or directory (its contents too with ``recurse``). Returns the protected
        paths that stayed (deepest denials, in order); everything else reachable is gone."""
        shown = normalize(path)
        target = self.host_path(shown)
        kept: list[str] = []
        try:
            if target.is_dir():
                for child in self.list_dir(shown) if recurse else []:
                    kept += self.remove(child, recurse=True)
                if kept or is_protected(shown):
                    return kept or [shown]
                target.rmdir()
            elif is_protected(shown):
                return [shown]
            else:
                target.unlink()
        except OSError as exc:
            raise _windows_error(exc, shown) from None
        return []

    def list_dir(self, path: str) -> list[str]:
        """Canonical Windows paths of a directory's entries, sorted like ``dir``."""
        base = normalize(path)
        host = self.host_path(base)
        prefix = base if base.endswith("\\") else base + "\\"
        try:
            names = os.listdir(host)
        except OSError as exc:
            raise _windows_error(exc, base) from None
        return [prefix + name for name in sorted(names, key=str.casefold)]
