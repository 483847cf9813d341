"""A real ``/bin/sh`` that sees a simulated Linux node's files as its ``/``.

Why a real shell and not a shell subset: what a reconciler sends a Linux node is POSIX shell with
heredocs, ``printf``, ``install``, ``sed -i``, redirections and quoting — the text itself is what
must be right (a drop-in's ``Environment=`` quoting, ``%`` doubled), and a subset would either
reject real scripts or accept wrong ones. So each command runs in the host's own ``sh`` and
coreutils, in a private mount namespace in which the node's directory tree is laid over the host's:

- ``/etc`` and ``/usr`` are overlays: the node's files on top (every write lands in the node's
  root, where the simulated systemd and trust store read them), the host's beneath, so the host's
  programs, libraries, users and ``ld.so.cache`` still work. A directory the node owns whole (its
  systemd units, its trust store, ``/etc/kubernetes``) is *opaque*: nothing of the host's shows
  through it;
- ``/var``, ``/run``, ``/tmp`` and ``/root`` are the node's own directories, bound over the host's;
- ``/proc`` is the node's: one directory per running service process with its ``environ`` and
  ``comm``, as the node's systemd started it (``nodeshell`` keeps it current), so
  ``/proc/$(systemctl show -p MainPID --value kubelet)/environ`` reads as on a real node, while
  ``/proc/self`` (and so ``/dev/stdin`` and ``/dev/fd``) leads to the host's procfs, bound at
  ``HOST_PROC``, so a shell's own descriptors work.

The command's text reaches the shell through a descriptor (a memory file), never on a command
line: the node's processes are the host's, and every user of the host can read every process's
argv, while a reconciler's command may carry a proxy's password. What the command itself then runs
(``sed 's/x/y/'``) does show in the host's ``ps``, as it would in the node's. The one difference
from ``sh -c``: a command's errors say ``eval:`` after the line number.

Nothing the shell does reaches the host's files, nor any network: it runs in a network namespace of
its own with no interface up, so a program on the node that tries a connection of its own (a real
``curl``) fails to connect — the lab's rule that nothing leaves for a real destination. The node's
``curl`` and ``crictl`` are node-aware commands whose traffic the lab sends through its own network
(``nodeegress``).

The host must allow mount and network namespaces and overlayfs (root, or a user namespace on
Linux ≥ 5.11 — not done here yet: the lab runs its Linux nodes as root, as CI does). Not
modelled: the node's own binaries (the host's ``sh``, coreutils and ``sed`` serve every node),
``/proc`` beyond each service's ``environ`` and ``comm``, devices, users other than root.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

OVERLAID = ("/etc", "/usr")
BOUND = ("/var", "/run", "/tmp", "/root")
# Bound last (``mount`` itself reads /proc/self/mountinfo): the node's processes, as the lab keeps them.
PROC = "/proc"
# The host's procfs, seen by the node's shell only through /proc/self (/dev/stdin, /dev/fd need it).
HOST_PROC = "/run/proxyfleet/proc"
PROC_LINKS = {"self": f"{HOST_PROC}/self", "thread-self": f"{HOST_PROC}/thread-self", "mounts": "self/mounts"}
# Directories a node owns whole: the host's entries under them never show (overlayfs "opaque").
OWNED = (
    "/etc/systemd", "/etc/ssl", "/etc/pki", "/etc/mco", "/etc/kubernetes", "/etc/default",
    "/usr/lib/systemd/system", "/usr/local/lib/systemd", "/usr/share/ca-certificates", "/usr/share/pki",
    "/usr/local/share/ca-certificates",
)
OPAQUE_XATTR = "trusted.overlay.opaque"
WORK = ".overlay-work"  # overlayfs' work directories, beside the node's tree (same filesystem)
# The node-aware commands' channel to the lab: dash redirects only descriptors 0-9, so a high one
# of those (a script of the reconciler's that takes fd 9 for itself cuts its node commands off).
CHANNEL_FD = 9
# The command's text is read from this descriptor, never from the host's command line: every user
# of the lab's host can read every process's argv (``ps``), and a reconciler's command may carry a
# proxy's credentials. (On the node it is fd 8, closed before the command runs.)
COMMAND_FD = 8
# Descriptors handed to the node's shell are numbered at least this, above every one dash can name,
# so moving them to 8 and 9 can never overwrite one another.
HANDED_OVER_FROM = 10
# The node's shell: the command read from COMMAND_FD and run as ``sh -c`` runs its argument. (Told
# apart only by its errors' "eval: " prefix: "sh: 1: eval: x: not found".)
NODE_SHELL = (f'proxyfleet_command=$(cat <&{COMMAND_FD}) || exit 125\n'
              f'exec {COMMAND_FD}<&-\n'
              f'eval "unset proxyfleet_command; $proxyfleet_command"')


class NodeMountError(RuntimeError):
    """The host cannot lay a node's tree over its own (no mount namespaces, no overlayfs)."""


def host_cannot_mount() -> str | None:
    """None when this host can run Linux nodes' shells (root, a private mount namespace, an
    overlay with an opaque directory); else why not, in the host's own words."""
    if os.geteuid() != 0:
        return "the lab's Linux nodes need root (mount namespaces and overlayfs)"
    if shutil.which("unshare") is None:
        return "the lab's Linux nodes need unshare(1) (util-linux)"
    with tempfile.TemporaryDirectory(prefix="proxyfleet-mount-probe-") as scratch:
        lower, upper, work, target = (Path(scratch) / d for d in ("lower", "upper", "work", "target"))
        for directory in (lower, upper, work, target):
            directory.mkdir()
        try:
            os.setxattr(upper, OPAQUE_XATTR, b"y")
        except OSError as exc:
            return f"cannot set {OPAQUE_XATTR} here: {exc.strerror}"
        options = f"lowerdir={lower},upperdir={upper},workdir={work}"
        probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "--net", "mount", "-t", "overlay",
                                "proxyfleet-probe", "-o", options, str(target)],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode != 0:
            return f"cannot mount an overlay in a private mount namespace: {probe.stderr.strip()}"
    return None


def handed_over(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` numbered ``HANDED_OVER_FROM`` or above, for ``argv``
    (give it to the child in ``pass_fds``; the caller closes it)."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HANDED_OVER_FROM)


def command_file(command: str) -> int:
    """A memory file holding ``command``, rewound, numbered for ``argv``; the caller closes it.
    Only its owner can open it (``/proc/PID/fd`` of root's processes)."""
    memory = os.memfd_create("proxyfleet-node-command")
    try:
        os.write(memory, command.encode("utf-8", "surrogateescape"))
        os.lseek(memory, 0, os.SEEK_SET)
        return handed_over(memory)
    finally:
        os.close(memory)


@dataclass(frozen=True)
class NodeMounts:
    """How one node's root is laid over the host's, inside a private mount namespace."""

    root: Path

    def prepare(self) -> None:
        """Make the node's tree ready to be mounted: every mount point and work directory, and
        the owned directories marked opaque (idempotent: run once per node, before its first
        command)."""
        for directory in (*OVERLAID, *BOUND, PROC):
            (self.root / directory.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for directory in OVERLAID:
            work = self.root / WORK / directory.lstrip("/")
            work.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").chmod(0o1777)
        (self.root / HOST_PROC.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for name, target in PROC_LINKS.items():
            link = self.root / PROC.lstrip("/") / name
            if not link.is_symlink():
                link.symlink_to(target)
        for directory in OWNED:
            path = self.root / directory.lstrip("/")
            path.mkdir(parents=True, exist_ok=True)
            try:
                os.setxattr(path, OPAQUE_XATTR, b"y")
            except OSError as exc:
                raise NodeMountError(f"cannot mark {path} opaque for overlayfs ({exc.strerror}): the "
                                     "lab's Linux nodes need root") from None

    def __post_init__(self) -> None:
        if not self.root.is_absolute() or any(self.root.is_relative_to(d) for d in OVERLAID):
            raise NodeMountError(f"a node's root must be an absolute path outside {' and '.join(OVERLAID)}: "
                                 f"{self.root}")

    def setup_script(self) -> str:
        """The shell text that mounts the node's tree (run first in the new namespace). The binds
        name their sources relative to the node's root, the shell's working directory: once the
        host directory that holds the root (``/tmp`` for a test's) is mounted over, the root is
        no longer reachable by its host path, but the working directory still is it."""
        lines = [f"cd {shlex.quote(str(self.root))}", f"mount --bind /proc ./{HOST_PROC.lstrip('/')}"]
        for directory in OVERLAID:
            upper = self.root / directory.lstrip("/")
            work = self.root / WORK / directory.lstrip("/")
            options = f"lowerdir={directory},upperdir={upper},workdir={work}"
            lines.append(f"mount -t overlay proxyfleet-node -o {shlex.quote(options)} {directory}")
        for directory in (*BOUND, PROC):  # recursive: /run carries the host's procfs along
            lines.append(f"mount --rbind ./{directory.lstrip('/')} {directory}")
        return " && ".join(lines)

    def argv(self, command_fd: int, channel_fd: int | None = None) -> list[str]:
        """The host command that runs the command held by ``command_fd`` (``command_file``) the
        way ``sh -c`` runs its argument, on the node: its own mount and network namespaces
        (nothing leaks to the host's), the node's tree mounted, then ``sh`` in ``/root``, the
        mounting shell replaced by it. ``channel_fd`` becomes the node's channel to the lab, fd
        ``CHANNEL_FD``, for the node-aware commands. Both are inherited (``pass_fds``), numbered
        from ``HANDED_OVER_FROM`` (``handed_over``), and moved down by bash: dash cannot name a
        descriptor above 9. The command's text appears on no command line."""
        for fd in (command_fd, channel_fd):
            if fd is not None and fd < HANDED_OVER_FROM:
                raise ValueError(f"descriptor {fd} handed to a node's shell must be numbered from "
                                 f"{HANDED_OVER_FROM} (handed_over)")
        moves = f"exec {COMMAND_FD}<&{command_fd} {command_fd}<&-"
        if channel_fd is not None:
            moves += f" {CHANNEL_FD}>&{channel_fd} {channel_fd}>&-"
        script = (f"{moves} && {self.setup_script()} || exit 125; "
                  f"cd /root && exec /bin/sh -c {shlex.quote(NODE_SHELL)}")
        return ["unshare", "--mount", "--propagation", "private", "--net", "/bin/bash", "-c", script]
