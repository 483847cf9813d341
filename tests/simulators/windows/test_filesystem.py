"""Windows paths: normalised like Win32 (drive-relative paths, trailing dots, SFTP's /C:/ form),
illegal names and unknown drives refused in Windows' own words, protected folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyfleet.simulators.windows.filesystem import (
    DriveNotFound,
    WindowsFilesystem,
    WindowsPathError,
    is_protected,
    normalize,
)


def test_normalize() -> None:
    assert normalize("c:/k/../k/./certs/") == "C:\\k\\certs"
    assert normalize("/C:/k/x.json") == "C:\\k\\x.json"  # as OpenSSH's SFTP server shows it
    assert normalize("x.txt", cwd="C:\\Users\\Administrator") == "C:\\Users\\Administrator\\x.txt"
    assert normalize("C:dir", cwd="C:\\k") == "C:\\k\\dir"
    assert normalize("C:\\k\\name. . ") == "C:\\k\\name"


def test_windows_rejects_what_it_rejects() -> None:
    with pytest.raises(DriveNotFound, match="A drive with the name 'D' does not exist"):
        normalize("D:\\x")
    with pytest.raises(WindowsPathError, match="Illegal characters in path"):
        normalize("C:\\k\\a|b")


def test_protected_folders() -> None:
    assert is_protected("C:\\") and is_protected("C:\\Users\\Administrator")
    assert not is_protected("C:\\k") and not is_protected("C:\\Users\\Administrator\\x.txt")


def test_files_live_under_the_node_root(tmp_path: Path) -> None:
    filesystem = WindowsFilesystem(tmp_path)
    filesystem.mkdir("C:\\k")
    filesystem.write_bytes("C:\\K\\Bundle.crt", b"pem")
    assert filesystem.exists("c:\\k\\bundle.crt")  # case-insensitive like NTFS
    assert filesystem.read_bytes("C:\\k\\BUNDLE.CRT") == b"pem"
    assert filesystem.is_dir("C:\\k") and not filesystem.exists("C:\\k\\other")


@pytest.mark.parametrize(("given", "expected"), [
    (r"C:\k\ca-bundle.crt", r"C:\k\ca-bundle.crt"),
    ("/C:/k/ca-bundle.crt", r"C:\k\ca-bundle.crt"),
    ("c:/k/./x/../ca-bundle.crt", r"C:\k\ca-bundle.crt"),
    (r"\k\x", r"C:\k\x"),
    ("relative.txt", r"C:\Users\Administrator\relative.txt"),
    (r"C:\..\..\etc\passwd", r"C:\etc\passwd"),
])
def test_windows_path_normalisation(given: str, expected: str) -> None:
    assert normalize(given, r"C:\Users\Administrator") == expected


def test_invalid_windows_paths_are_rejected() -> None:
    with pytest.raises(WindowsPathError):
        normalize(r"C:\k\a<b")
    with pytest.raises(WindowsPathError):
        normalize(r"Q:\x")
