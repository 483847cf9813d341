"""Directories only we may write: a lab's state directory (keys, kubeconfigs, logs), the
directory kept by ``--keep``, and the per-user runtime directory of locks and proxy configuration.

Anyone who can write a directory can plant a link in it, or rename what we put there; so an
existing one must belong to us and be writable by no one else, and a missing one is created
private. Nothing here changes a directory someone else made: it refuses, and says what to do.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
from collections.abc import Mapping
from pathlib import Path

RUNTIME_MODE = 0o711  # others may pass through (a proxy user reaches its own directory), not list


class NotPrivateError(RuntimeError):
    """A directory that is someone else's, or that others can write."""

    reason = "NotPrivateError"


def _owner_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def private_directory(path: Path, mode: int = 0o700) -> Path:
    """``path``, made with ``mode`` if missing (its missing parents with the default mode), or
    checked: a directory owned by our effective user that neither its group nor others can write.
    A link to such a directory is accepted only if we (or root) own the link too. Raises
    ``NotPrivateError`` with a one-line reason naming the directory, its owner and mode."""
    euid = os.geteuid()
    if not os.path.lexists(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked below like any other
            os.mkdir(path, mode)  # the umask can only narrow it
    link = os.lstat(path)
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (euid, 0):
        raise NotPrivateError(f"{path} is a symbolic link owned by {_owner_name(link.st_uid)}: give a directory of "
                              "your own instead")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise NotPrivateError(f"{path} is a symbolic link to nothing: give a directory of your own") from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotPrivateError(f"{path} exists and is not a directory")
    found = f"owned by {_owner_name(info.st_uid)}, mode {stat.S_IMODE(info.st_mode):04o}"
    if info.st_uid != euid:
        raise NotPrivateError(f"{path} is {found}, not yours ({_owner_name(euid)}): keys and logs go there, so "
                              "give a directory you own (or remove that one)")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotPrivateError(f"{path} is {found}: others can write it, and keys and logs go there; "
                              f"run chmod go-w {path} or give another directory")
    return path


def runtime_directory(euid: int | None = None, environ: Mapping[str, str] | None = None,
                      run: Path = Path("/run"), tmp: Path = Path("/tmp")) -> Path:
    """This user's private runtime directory (mode 0711), made if missing: ``/run/proxyfleet`` for
    root (``/tmp/proxyfleet-0`` where ``/run`` cannot be written), else
    ``$XDG_RUNTIME_DIR/proxyfleet`` or ``/tmp/proxyfleet-<uid>``. Raises ``NotPrivateError`` when
    it exists and is not ours alone (someone made it first: remove it)."""
    euid = os.geteuid() if euid is None else euid
    environ = os.environ if environ is None else environ
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if euid == 0 and os.access(run, os.W_OK):
        path = run / "proxyfleet"
    elif euid != 0 and runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        path = Path(runtime) / "proxyfleet"
    else:
        path = tmp / f"proxyfleet-{euid}"
    private_directory(path, RUNTIME_MODE)
    if stat.S_IMODE(os.stat(path).st_mode) != RUNTIME_MODE:
        os.chmod(path, RUNTIME_MODE)  # ours: a umask of 077 would keep a proxy user out of its directory
    return path
