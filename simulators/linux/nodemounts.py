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

The namespace is made once per node (``NodeMounts.mount``, when the node starts) and every command
enters it (``nsenter``), so a command costs two program starts, not ten mounts. In it, the host's
own file systems — all but the node's directories above — are read-only: nothing a node's command
writes lands on the host (a write outside the node's tree fails "Read-only file system"). Nor does
anything reach a network: the namespace has a network of its own with no interface up, so a program
on the node that tries a connection of its own fails to connect — the lab's rule that nothing
leaves for a real destination. The node's ``curl`` and ``crictl`` are node-aware commands whose
traffic the lab sends through its own network (``nodeegress``).

Not contained: the node's processes are root on the host, so the kernel's settings under ``/sys``,
cgroups and signals to the host's processes are not fenced off — the lab runs a reconciler's
commands, not hostile code.

The host must allow mount and network namespaces and overlayfs (root, or a user namespace on
Linux ≥ 5.11 — not done here yet: the lab runs its Linux nodes as root, as CI does). Not
modelled: the node's own binaries (the host's ``sh``, coreutils and ``sed`` serve every node),
``/proc`` beyond each service's ``environ`` and ``comm``, devices, users other than root.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)
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
# File systems that hold no files of the host's: left as they are in a node's namespace (sysfs and
# the like are the kernel's settings, not files: see the module's "Not contained").
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "bpf", "tracefs", "debugfs", "securityfs",
    "pstore", "fusectl", "configfs", "hugetlbfs", "binfmt_misc", "autofs", "nsfs", "efivarfs", "rpc_pipefs",
    "selinuxfs"})
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
# How long ``end_processes`` waits for the processes it killed to have ended: bounds only a kill that
# does not take (a process in uninterruptible sleep); a SIGKILL is otherwise done as its target runs.
END_TIMEOUT = 30.0
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
    for program in ("unshare", "nsenter"):
        if shutil.which(program) is None:
            return f"the lab's Linux nodes need {program}(1) (util-linux)"
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


def _unescaped(field: str) -> str:
    """A mountinfo field with its octal escapes (``\\040`` for a space) undone."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def host_storage_mounts(mountinfo: str) -> list[str]:
    """The host's writable mounts that hold files (not procfs, sysfs or the like), outside what
    a node lays over them, from ``/proc/self/mountinfo``'s text: what ``NodeMounts`` makes
    read-only for the node's processes, so nothing they write lands on the host."""
    covered = (*OVERLAID, *BOUND, PROC)
    found = []
    for line in mountinfo.splitlines():
        fields, _, rest = line.partition(" - ")
        parts, kind = fields.split(), rest.split(" ", 1)[0]
        if len(parts) < 6 or kind in PSEUDO_FILESYSTEMS or "ro" in parts[5].split(","):
            continue
        point = _unescaped(parts[4])
        if any(point == d or point.startswith(d + "/") for d in covered):
            continue  # the node's own mount hides it
        found.append(point)
    return found


def _namespace_of(pid: int) -> str | None:
    """The mount namespace of process ``pid`` (``mnt:[inode]``); None when it has ended."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _await_exits(pidfds: list[int], timeout: float) -> None:
    """Wait until each pidfd's process has exited (its pidfd readable), up to ``timeout`` seconds."""
    waiting = select.poll()
    for handle in pidfds:
        waiting.register(handle, select.POLLIN)
    left, deadline = len(pidfds), time.monotonic() + timeout
    while left and (remaining := deadline - time.monotonic()) > 0:
        for handle, _ in waiting.poll(remaining * 1000):
            waiting.unregister(handle)
            left -= 1


def processes_in_namespace(namespace: str, exclude: int | None = None) -> list[int]:
    """The host's processes whose mount namespace is ``namespace`` (``mnt:[inode]``), but ``exclude``."""
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int(entry) != exclude and _namespace_of(int(entry)) == namespace]


def process_stat(pid: int) -> tuple[str, list[str]] | None:
    """Process ``pid``'s name and the fields of ``/proc/PID/stat`` after it (state first, then
    ppid, pgrp, …: proc(5)'s field 3 is index 0); None when no process has that pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the name (2nd field) is in parentheses and may hold spaces and parentheses: split after its end
    end = stat.rindex(b")")
    return stat[stat.index(b"(") + 1:end].decode(errors="replace"), stat[end + 2:].decode().split()


def process_summary(pid: int) -> str:
    """``pid (comm) state S pgid G`` from ``/proc/PID/stat``, for a lab log; "ended" when it has."""
    found = process_stat(pid)
    if found is None:
        return f"{pid} ended"
    name, fields = found
    return f"{pid} ({name}) state {fields[0]} pgid {fields[2]}"


class NodeMounts:
    """How one node's root is laid over the host's, in a mount namespace of the node's own that
    lasts from ``mount`` to ``unmount`` (so each command only enters it), with the host's own
    file systems read-only in it."""

    def __init__(self, root: Path) -> None:
        if not root.is_absolute() or any(root.is_relative_to(d) for d in OVERLAID):
            raise NodeMountError(f"a node's root must be an absolute path outside {' and '.join(OVERLAID)}: "
                                 f"{root}")
        self.root = root
        # A process that holds the namespace (``cat`` on a pipe from the lab: if the lab dies, the
        # pipe ends, the holder exits and the namespace goes with it — nothing is left mounted).
        self._holder: subprocess.Popen[bytes] | None = None

    def prepare(self) -> None:
        """Make the node's tree ready to be mounted: every mount point and work directory, and
        the owned directories marked opaque (idempotent: run once per node, before ``mount``)."""
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

    def setup_script(self, read_only: list[str] | None = None) -> str:
        """The shell text that mounts the node's tree (run first in the new namespace), then makes
        the host's ``read_only`` mounts so. The binds name their sources relative to the node's
        root, the shell's working directory: once the host directory that holds the root (``/tmp``
        for a test's) is mounted over, the root is no longer reachable by its host path, but the
        working directory still is it. The host's procfs is bound read-only: a node's shell
        reaches its own descriptors through it, never the host kernel's settings."""
        lines = [f"cd {shlex.quote(str(self.root))}",
                 # the node's own name in its own UTS namespace (``hostname``, ``uname -n``)
                 "{ [ ! -s ./etc/hostname ] || head -n 1 ./etc/hostname > /proc/sys/kernel/hostname; }",
                 f"mount --bind -o ro /proc ./{HOST_PROC.lstrip('/')}"]
        for directory in OVERLAID:
            upper = self.root / directory.lstrip("/")
            work = self.root / WORK / directory.lstrip("/")
            options = f"lowerdir={directory},upperdir={upper},workdir={work}"
            lines.append(f"mount -t overlay proxyfleet-node -o {shlex.quote(options)} {directory}")
        for directory in (*BOUND, PROC):  # recursive: /run carries the host's procfs along
            lines.append(f"mount --rbind ./{directory.lstrip('/')} {directory}")
        # last: the overlays and binds keep writing where they write (the node's tree)
        script = " && ".join(lines)
        # A mount the host will not make read-only is named, not fatal: the node still runs, and
        # ``mount`` logs which of the host's file systems its commands could write to.
        sealing = "; ".join(f"{{ mount -o remount,bind,ro {shlex.quote(p)} 2>/dev/null || "
                            f"printf 'writable %s\\n' {shlex.quote(p)}; }}" for p in read_only or ())
        return f"{script} && {{ {sealing}; }}" if sealing else script

    @property
    def holder_pid(self) -> int:
        """The process holding the node's namespaces (``NodeMountError`` while they are not up)."""
        holder = self._holder
        if holder is None or holder.poll() is not None:
            raise NodeMountError(f"the node's namespace at {self.root} is not up (mount it first)")
        return holder.pid

    @property
    def view(self) -> Path:
        """The node's ``/`` as its processes see it, for the lab to read and write through (the
        overlays see what the lab changes only if it goes through them; an absolute link on the
        node resolves on the node)."""
        return Path(f"/proc/{self.holder_pid}/root")

    @property
    def mounted(self) -> bool:
        """Whether the node's namespace is up (its holder runs)."""
        return self._holder is not None and self._holder.poll() is None

    def mount(self) -> None:
        """Set up the node's namespace (blocking; idempotent): its own mount namespace with the
        node's tree laid over the host's and the host's file systems read-only, a network
        namespace of its own with no interface up, and a UTS namespace holding the node's name
        (its ``/etc/hostname``)."""
        if self.mounted:
            return
        read_only = host_storage_mounts(Path("/proc/self/mountinfo").read_text())
        script = f"{{ {self.setup_script(read_only)}; }} || exit 125; echo ready; exec cat"
        holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--net", "--uts", "/bin/bash",
                                   "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, start_new_session=True)
        assert holder.stdout is not None and holder.stderr is not None
        writable = []
        line = holder.stdout.readline()
        while line.startswith(b"writable "):
            writable.append(line[9:].decode(errors="replace").strip())
            line = holder.stdout.readline()
        if writable:
            log.warning("%s: the host's %s stay writable to the node's commands (mount refused to make "
                        "them read-only)", self.root, ", ".join(writable))
        if line != b"ready\n":
            holder.wait()
            reason = holder.stderr.read().decode(errors="replace").strip()
            raise NodeMountError(f"cannot lay the node's tree at {self.root} over the host's: {reason}")
        holder.stdout.close()
        holder.stderr.close()
        self._holder = holder

    def unmount(self) -> None:
        """End the node's namespace (blocking; idempotent): what the node mounted goes with it."""
        holder, self._holder = self._holder, None
        if holder is None:
            return
        assert holder.stdin is not None
        holder.stdin.close()  # the holder's input ends: it exits
        try:
            holder.wait(timeout=30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()

    def _namespace(self) -> str | None:
        """The node's mount namespace (``mnt:[inode]``); None while it is not up."""
        return _namespace_of(self.holder_pid) if self.mounted else None

    def processes(self) -> list[int]:
        """The processes running in the node's namespace, its holder aside (blocking); none while
        the namespace is not up."""
        namespace = self._namespace()
        return processes_in_namespace(namespace, exclude=self.holder_pid) if namespace is not None else []

    def end_processes(self) -> list[int]:
        """SIGKILL every process in the node's namespace but its holder and wait until each has
        ended (blocking, up to ``END_TIMEOUT``): what powering a node off does to whatever it ran,
        a process that left its command's process group (a ``setsid``, a daemon) too. The pids
        signalled; none while the namespace is not up. One still running past the bound (a kill
        does not take in uninterruptible sleep) stays in ``processes()``, for the caller to name."""
        namespace = self._namespace()
        if namespace is None:
            return []
        ended: list[int] = []
        handles: list[int] = []
        killed: list[int] = []  # the handles of the processes signalled: only those are waited for
        try:
            for pid in processes_in_namespace(namespace, exclude=self.holder_pid):
                try:
                    # a pidfd, so that a pid that ended and was reused since the look is never signalled
                    handle = os.pidfd_open(pid)
                except ProcessLookupError:
                    continue
                handles.append(handle)
                try:
                    if _namespace_of(pid) == namespace:
                        signal.pidfd_send_signal(handle, signal.SIGKILL)
                        ended.append(pid)
                        killed.append(handle)
                except ProcessLookupError:
                    pass
            # A kill is delivered when its target next runs, not by the call: a pidfd turns
            # readable once its process has exited (and left the namespace).
            _await_exits(killed, END_TIMEOUT)
        finally:
            for handle in handles:
                os.close(handle)
        return ended

    def argv(self, command_fd: int, channel_fd: int | None = None) -> list[str]:
        """The host command that runs the command held by ``command_fd`` (``command_file``) the
        way ``sh -c`` runs its argument, on the node: in the node's namespaces (``mount``), in
        ``/root``, the entering shell replaced by ``sh``. ``channel_fd`` becomes the node's
        channel to the lab, fd ``CHANNEL_FD``, for the node-aware commands. Both are inherited
        (``pass_fds``), numbered from ``HANDED_OVER_FROM`` (``handed_over``), and moved down by
        bash: dash cannot name a descriptor above 9. The command's text appears on no command line."""
        for fd in (command_fd, channel_fd):
            if fd is not None and fd < HANDED_OVER_FROM:
                raise ValueError(f"descriptor {fd} handed to a node's shell must be numbered from "
                                 f"{HANDED_OVER_FROM} (handed_over)")
        holder = self.holder_pid  # (refused while the namespace is not up)
        moves = f"exec {COMMAND_FD}<&{command_fd} {command_fd}<&-"
        if channel_fd is not None:
            moves += f" {CHANNEL_FD}>&{channel_fd} {channel_fd}>&-"
        script = f"{moves} || exit 125; cd /root && exec /bin/sh -c {shlex.quote(NODE_SHELL)}"
        namespaces = [f"--{kind}=/proc/{holder}/ns/{name}" for kind, name in (("mount", "mnt"), ("net", "net"),
                                                                               ("uts", "uts"))]
        return ["nsenter", *namespaces, "/bin/bash", "-c", script]
