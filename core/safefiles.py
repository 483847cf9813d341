"""Files in directories someone else can write (a proxy's configuration directory, which the proxy
or its container owns; a vendor's configuration tree): read, listed, handed over and removed
without ever following a symbolic link placed there, and without opening anything but regular
files — as root, following one would read, give away or delete whatever it points at, and opening
a device can have effects of its own.

A path is opened one component at a time below a directory the caller trusts (``O_NOFOLLOW``
relative to the parent's descriptor, so a link in place of a parent directory is refused too). A
file is first opened with ``O_PATH`` (which opens nothing: no FIFO blocks, no device acts), checked
with ``fstat``, and only then reopened for reading through ``/proc/self/fd``, so the file checked
is the file read.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 16


class UnsafeFileError(OSError):
    """A path that is a symbolic link, leaves its directory, or is not a regular file."""

    reason = "UnsafeFileError"


@dataclass(frozen=True)
class Skipped:
    """An entry left out because it is not a plain file or directory."""

    path: PurePosixPath  # relative to the directory walked
    why: str  # "a symbolic link", "not a regular file"

    def __str__(self) -> str:
        return f"{self.path} ({self.why})"


def _parts(relative: str | PurePosixPath) -> list[str]:
    parts = [part for part in PurePosixPath(relative).parts if part != "."]
    if parts[:1] == ["/"] or ".." in parts:
        raise UnsafeFileError(errno.EINVAL, f"{relative!s} is not a path below its directory")
    return parts


def _open_directory(directory: Path, parts: list[str]) -> int:
    """A descriptor of ``directory/parts...``: ``directory`` itself followed as named (the caller
    trusts it), every component below it opened without following a link."""
    fd = os.open(directory, _DIRECTORY)
    try:
        for part in parts:
            child = _open_child_directory(fd, part)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child_directory(parent: int, name: str) -> int:
    try:
        return os.open(name, _DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeFileError(exc.errno, f"{name} is a symbolic link or not a directory") from None
        raise


def _check_regular(fd: int, name: str) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISLNK(mode):
        raise UnsafeFileError(errno.ELOOP, f"{name} is a symbolic link")
    if not stat.S_ISREG(mode):
        raise UnsafeFileError(errno.EINVAL, f"{name} is not a regular file")


def _open_regular(parent: int, name: str) -> int:
    """A read descriptor of the regular file ``name`` in ``parent``, never of a link, FIFO or device."""
    try:
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(exc.errno, f"{name} is a symbolic link") from None
        raise
    try:
        _check_regular(handle, name)  # an O_PATH descriptor of a link is the link itself
        try:
            fd = os.open(f"/proc/self/fd/{handle}", _READ)  # the very inode just checked
        except FileNotFoundError:  # no /proc: open it again by name, checked once more below
            fd = os.open(name, _READ | os.O_NOFOLLOW, dir_fd=parent)
    finally:
        os.close(handle)
    try:
        _check_regular(fd, name)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, limit: int, tail: bool) -> bytes:
    size = os.fstat(fd).st_size
    start = max(0, size - limit) if tail else 0
    if start:
        os.lseek(fd, start, os.SEEK_SET)
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := os.read(fd, min(_CHUNK, left))):
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if start:  # from the first whole line: a cut one could be read as something it is not
        data = data.partition(b"\n")[2]
    return data


def read_regular(directory: Path, relative: str | PurePosixPath, limit: int, tail: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file ``relative`` below ``directory``: its first, or
    with ``tail`` its last (from the first whole line). Raises ``UnsafeFileError`` for a link
    anywhere below ``directory`` or for a FIFO, device or socket; ``OSError`` when it cannot be read."""
    parts = _parts(relative)
    if not parts:
        raise UnsafeFileError(errno.EISDIR, f"{directory} is a directory")
    parent = _open_directory(directory, parts[:-1])
    try:
        fd = _open_regular(parent, parts[-1])
    finally:
        os.close(parent)
    try:
        return _read_fd(fd, limit, tail)
    finally:
        os.close(fd)


def read_named(path: Path, limit: int) -> bytes:
    """A file a person named (``--proxy-config FILE``): links in its path are theirs to choose and
    are followed; what it ends at must be a regular file."""
    resolved = Path(os.path.realpath(path))
    return read_regular(resolved.parent, resolved.name, limit)


def entries(directory: Path, relative: str | PurePosixPath = ".") -> list[tuple[str, str]]:
    """(name, kind) of each entry of the directory ``relative`` below ``directory``, sorted by
    name; kind is "file", "directory", "link" or "other" (links are not followed)."""
    fd = _open_directory(directory, _parts(relative))
    try:
        return sorted((entry.name, _kind(entry)) for entry in os.scandir(fd))
    finally:
        os.close(fd)


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "directory"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _walk(fd: int, prefix: PurePosixPath) -> Iterator[tuple[int, str, PurePosixPath, str]]:
    """(parent descriptor, name, relative path, kind) of everything below ``fd``, depth first;
    a subdirectory is opened without following a link (one swapped in meanwhile is a "link")."""
    for entry in sorted(os.scandir(fd), key=lambda e: e.name):
        kind = _kind(entry)
        path = prefix / entry.name
        if kind != "directory":
            yield fd, entry.name, path, kind
            continue
        try:
            child = _open_child_directory(fd, entry.name)
        except UnsafeFileError:
            yield fd, entry.name, path, "link"
            continue
        try:
            yield fd, entry.name, path, kind
            yield from _walk(child, path)
        finally:
            os.close(child)


def regular_files(directory: Path, limit: int) -> tuple[list[tuple[PurePosixPath, bytes]], list[Skipped]]:
    """Every regular file below ``directory`` (a directory a person named: followed if it is a
    link, nothing below it is) with its contents, and what was left out: links (to files or to
    directories), FIFOs, devices, sockets, and files larger than ``limit`` bytes."""
    files: list[tuple[PurePosixPath, bytes]] = []
    skipped: list[Skipped] = []
    top = os.open(os.path.realpath(directory), _DIRECTORY)
    try:
        for parent, name, path, kind in _walk(top, PurePosixPath()):
            if kind in ("link", "other"):  # "other" is never opened: a device may act on an open
                skipped.append(Skipped(path, "a symbolic link" if kind == "link" else "not a regular file"))
                continue
            if kind == "directory":
                continue
            try:
                fd = _open_regular(parent, name)
            except UnsafeFileError as exc:  # swapped since it was listed
                skipped.append(Skipped(path, "a symbolic link" if exc.errno == errno.ELOOP else "not a regular file"))
                continue
            try:
                if os.fstat(fd).st_size > limit:
                    skipped.append(Skipped(path, f"larger than {limit} bytes"))
                else:
                    files.append((path, _read_fd(fd, limit, tail=False)))
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return files, skipped


def chown_tree(directory: Path, uid: int, gid: int) -> None:
    """Give ``directory`` and everything in it to ``uid:gid``; a link is changed itself, never
    what it points at."""
    top = os.open(directory, _DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(top, uid, gid)
        for parent, name, _path, _kind in _walk(top, PurePosixPath()):
            os.chown(name, uid, gid, dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(top)


def remove_tree(path: Path) -> bool:
    """Delete ``path`` and everything below it, removing links rather than following them (Linux's
    ``shutil.rmtree`` works on descriptors: ``avoids_symlink_attacks``); a link at ``path`` itself
    is not followed either. False when something is left (it says nothing of what)."""
    if os.path.islink(path):
        os.unlink(path)
        return True
    if not shutil.rmtree.avoids_symlink_attacks:  # a platform whose rmtree would follow: leave it
        return False
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:  # 3.11's rmtree recurses: a tree nested deeper than that is left
        return False
    return not os.path.lexists(path)
