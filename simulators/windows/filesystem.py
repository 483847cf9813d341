"""The node's ``C:`` drive, kept as a plain directory tree on the host so a person can look.

Windows paths (``C:\\k\\ca-bundle.crt``, ``C:/k/x``, ``/C:/k/x`` as SFTP clients send them,
``\\k\\x``, relative paths) are normalised, ``..`` can never leave the drive, and names match
case-insensitively like NTFS does while keeping the case they were created with.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_INVALID_NAME = re.compile(r'[<>:"|?*\x00-\x1f]')


class WindowsPathError(ValueError):
    """A path that Windows itself would reject."""

    reason = "WindowsPathError"


class DriveNotFound(WindowsPathError):
    reason = "DriveNotFound"

    def __init__(self, drive: str) -> None:
        super().__init__(f"Cannot find drive. A drive with the name '{drive}' does not exist.")
        self.drive = drive


def normalize(path: str, cwd: str = "C:\\") -> str:
    """Canonical absolute form ``C:\\dir\\file`` (no trailing separator except the root)."""
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


class WindowsFilesystem:
    """Maps the node's ``C:`` drive onto ``<root>/C`` on the host."""

    def __init__(self, root: Path) -> None:
        self.root = root / "C"
        self.root.mkdir(parents=True, exist_ok=True)

    def host_path(self, windows_path: str) -> Path:
        """Host path of a canonical Windows path, matching existing names case-insensitively."""
        current = self.root
        for part in normalize(windows_path).split("\\")[1:]:
            candidate = current / part
            if not candidate.exists() and current.is_dir():
                folded = part.casefold()
                with os.scandir(current) as entries:
                    for entry in entries:
                        if entry.name.casefold() == folded:
                            candidate = current / entry.name
                            break
            current = candidate
        return current

    def windows_path(self, host: Path) -> str:
        relative = host.relative_to(self.root)
        return "C:\\" + "\\".join(relative.parts)

    def exists(self, path: str) -> bool:
        return self.host_path(path).exists()

    def is_dir(self, path: str) -> bool:
        return self.host_path(path).is_dir()

    def read_bytes(self, path: str) -> bytes:
        return self.host_path(path).read_bytes()

    def write_bytes(self, path: str, data: bytes) -> None:
        target = self.host_path(path)
        if not target.parent.is_dir():
            raise FileNotFoundError(
                f"Could not find a part of the path '{normalize(path)}'.")
        target.write_bytes(data)

    def mkdir(self, path: str) -> None:
        self.host_path(path).mkdir(parents=True, exist_ok=True)

    def remove(self, path: str, recurse: bool = False) -> None:
        target = self.host_path(path)
        if target.is_dir():
            if recurse:
                shutil.rmtree(target)
            else:
                target.rmdir()
        else:
            target.unlink()

    def list_dir(self, path: str) -> list[str]:
        """Canonical Windows paths of a directory's entries, sorted like ``dir``."""
        base = normalize(path)
        host = self.host_path(base)
        prefix = base if base.endswith("\\") else base + "\\"
        return [prefix + name for name in sorted(os.listdir(host), key=str.casefold)]
