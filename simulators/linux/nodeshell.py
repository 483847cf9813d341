"""One command on a simulated Linux node: a real ``/bin/sh`` on the node's tree (``nodemounts``),
with the node-aware commands answered by the lab's model of the node (``nodecommands``, in a worker
thread) and its network clients by the lab's network (``nodeegress``, on the event loop).

Each node-aware command is a small POSIX ``sh`` script in the node's ``/usr/bin`` (its tree's, so
it takes the place of the host's ``systemctl`` for the node only). It sends its arguments down
the channel the session was started with (fd ``CHANNEL_FD``, a socket pair), reads back its exit
status, and prints the output the lab left in the node's ``/run/proxyfleet``. Node commands of one
session take turns (``flock``): ``systemctl restart a & systemctl restart b`` works, one after
the other, as systemd's job queue runs them.

The request is NUL-separated — the shim's pid, the argument count, the command's name, its
arguments — so any byte but NUL passes through, quotes and newlines included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.looplag import poll_until
from proxyfleet.simulators.linux.nodecommands import SYSTEMCTL_ALIASES, LinuxNodeModel, commands_for, run_command
from proxyfleet.simulators.linux.nodeegress import EGRESS_COMMANDS, CallerGone
from proxyfleet.simulators.linux.nodemounts import (
    CHANNEL_FD,
    PROC,
    NodeMounts,
    command_file,
    handed_over,
    process_stat,
    process_summary,
)
from proxyfleet.simulators.linux.servicemanager import Outcome

log = logging.getLogger(__name__)

# How long a killed command may take to end before the lab says it is stuck: a SIGKILLed process
# ends in milliseconds on any machine (and the bound moves with the lab's own stalls).
REAP_TIMEOUT = 30.0
REPLIES = "/run/proxyfleet"  # on the node: the lock and each call's output


def shim_text(name: str) -> str:
    """The node's ``name``: a script that asks the lab over the session's channel, as the name
    it was called by (``/usr/sbin/reboot`` is ``systemctl`` under another name)."""
    fd = CHANNEL_FD
    return (f"#!/bin/sh\n"
            f"# {name} on a proxyfleet-simulated node, answered by the lab's model of the node\n"
            f"exec 8>>{REPLIES}/lock && flock 8 || exit 126\n"
            f"printf '%s\\0' \"$$\" \"$#\" \"${{0##*/}}\" \"$@\" >&{fd} || exit 126\n"
            f"IFS= read -r code <&{fd} || exit 126\n"
            f"cat {REPLIES}/out.$$ && cat {REPLIES}/err.$$ >&2\n"
            f"rm -f {REPLIES}/out.$$ {REPLIES}/err.$$\n"
            f"exit \"$code\"\n")


def sync_proc(model: LinuxNodeModel) -> None:
    """Make the node's ``/proc`` show its running service processes: ``environ`` (NUL-separated,
    in the order systemd passed it) and ``comm``; a stopped one's directory goes."""
    proc = model.root / PROC.lstrip("/")
    proc.mkdir(parents=True, exist_ok=True)
    running = {str(p.pid): (unit, p) for unit, p in model.systemd.running.items()}
    for entry in proc.iterdir():
        if entry.name.isdigit() and entry.name not in running:  # (the rest: nodemounts' links)
            shutil.rmtree(entry)
    for pid, (unit, process) in running.items():
        directory = proc / pid
        if directory.is_dir():
            continue  # a process's environment never changes once it started
        directory.mkdir()
        (directory / "environ").write_bytes(b"".join(f"{k}={v}\0".encode("utf-8", "surrogateescape")
                                                     for k, v in process.environment.items()))
        (directory / "comm").write_text(unit.removesuffix(".service") + "\n")


# The node's user may do anything as root without a password, as RHCOS's ``core`` may; every
# command already runs as root, so ``sudo`` only runs its command (its options a script may give
# are accepted; any other is refused saying so, never ignored).
SUDO = """#!/bin/sh
# sudo on a proxyfleet-simulated node: the session is root's already
while [ $# -gt 0 ]; do
    case "$1" in
        -n|-E|-H|-S|--non-interactive|--preserve-env|--set-home|--stdin) shift ;;
        --) shift; break ;;
        -*) echo "sudo: proxyfleet's simulated sudo does not model the option $1" >&2; exit 1 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: sudo [-nEHS] command [arg ...]" >&2; exit 1; }
exec "$@"
"""


def install_commands(model: LinuxNodeModel) -> None:
    """Put the flavour's node-aware commands, and ``sudo``, in the node's ``/usr/bin`` (idempotent)."""
    replies = model.root / REPLIES.lstrip("/")
    replies.mkdir(parents=True, exist_ok=True)
    replies.chmod(0o700)
    scripts = {name: shim_text(name) for name in (*commands_for(model.flavour), *EGRESS_COMMANDS)}
    for name, text in {**scripts, "sudo": SUDO}.items():
        path = model.root / "usr/bin" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    for alias in SYSTEMCTL_ALIASES:  # as RHCOS and Debian have them, whatever the host has
        link = model.root / "usr/sbin" / alias
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to("../bin/systemctl")


@dataclass(frozen=True)
class CommandResult:
    """How a command ended on the node."""

    code: int
    stdout: bytes
    stderr: bytes


class ChannelError(RuntimeError):
    """A node command sent something that is not a request (a script wrote on fd 9)."""


def parse_requests(buffer: bytearray) -> list[tuple[int, str, list[str]]]:
    """Take every whole request off the front of ``buffer``: (pid, command, arguments)."""
    found: list[tuple[int, str, list[str]]] = []
    while True:
        fields = bytes(buffer).split(b"\0")
        if len(fields) < 4:
            return found
        try:
            pid, count = int(fields[0]), int(fields[1])
        except ValueError:
            raise ChannelError(f"not a node command's request on fd {CHANNEL_FD}: {bytes(buffer[:60])!r}") from None
        if len(fields) - 1 < 3 + count:  # the last field is what follows the final NUL
            return found
        words = [f.decode("utf-8", "surrogateescape") for f in fields[2:3 + count]]
        found.append((pid, words[0], words[1:]))
        del buffer[:sum(len(f) + 1 for f in fields[:3 + count])]


def _answer(model: LinuxNodeModel, pid: int, name: str, args: list[str]) -> int:
    """Run one node command against the model, keep the node's ``/proc`` current, and leave its
    output where the shim reads it; its exit status. (Blocking: run in a worker thread.)"""
    try:
        with model.lock:
            outcome = run_command(model, name, args)
            sync_proc(model)
    except Exception:  # the command gets an answer whatever the model did: never a hang
        log.exception("%s on the node at %s failed", name, model.root)
        outcome = _internal_error(name)
    _leave_replies(model, pid, outcome)
    return outcome.code


def process_start_time(pid: int) -> int | None:
    """When the process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``'s 22nd
    field); None when no process has that pid."""
    found = process_stat(pid)
    return int(found[1][19]) if found is not None else None


def _sync_proc_locked(model: LinuxNodeModel) -> None:
    """``sync_proc`` taking turns with the model's other writers: a command starting while the node
    powers off (which empties ``/proc``) once met its ``rmtree`` halfway and failed the reboot."""
    with model.lock:
        sync_proc(model)


def _internal_error(name: str) -> Outcome:
    return Outcome(1, stderr=f"{name}: internal error in the simulated node; see the lab log\n")


def _leave_replies(model: LinuxNodeModel, pid: int, outcome: Outcome) -> None:
    """Put a command's output where its shim reads it (blocking)."""
    replies = model.root / REPLIES.lstrip("/")
    (replies / f"out.{pid}").write_text(outcome.stdout, errors="surrogateescape")
    (replies / f"err.{pid}").write_text(outcome.stderr, errors="surrogateescape")


async def _answer_egress(model: LinuxNodeModel, pid: int, name: str, args: list[str], session: int) -> int:
    """Run one of the node's network clients on the loop (its traffic is the loop's); its exit status."""
    try:
        outcome = await EGRESS_COMMANDS[name](model, args, pid, session)
    except CallerGone as exc:
        outcome = Outcome(126, stderr=f"{name}: proxyfleet's simulated node cannot serve this call: {exc}\n")
    except Exception:  # an answer whatever happened: never a hang
        log.exception("%s on the node at %s failed", name, model.root)
        outcome = _internal_error(name)
    await asyncio.to_thread(_leave_replies, model, pid, outcome)
    return outcome.code


# The command whose node command the model is answering, as the model's worker thread sees it
# (``asyncio.to_thread`` carries the context over): tells the node which command asked for a reboot.
ASKING: ContextVar[NodeCommand | None] = ContextVar("ASKING", default=None)


async def _serve(model: LinuxNodeModel, channel: socket.socket, command: NodeCommand) -> None:
    ASKING.set(command)  # this task's own context: every answer it asks of a thread sees it
    loop = asyncio.get_running_loop()
    buffer = bytearray()
    while True:
        try:
            data = await loop.sock_recv(channel, 65536)
        except ConnectionResetError:
            return  # killed with a request unread
        if not data:
            return  # every process of the session has ended (or closed fd 9)
        buffer += data
        for pid, name, args in parse_requests(buffer):
            if name in EGRESS_COMMANDS:
                code = await _answer_egress(model, pid, name, args, command.process.pid)
            else:
                code = await asyncio.to_thread(_answer, model, pid, name, args)
                if model.on_change is not None:
                    model.on_change()  # (say, the kubelet restarted: the lab's kubelet follows)
            try:
                await loop.sock_sendall(channel, f"{code}\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                return  # the caller was killed while it waited (the node went down): nobody to tell


class NodeCommand:
    """A command running on the node. ``process`` streams its stdin, stdout and stderr; the node
    commands of every process it started, the ones it left running in the background too, are
    served until the last process holding the channel has ended (``served``)."""

    def __init__(self, model: LinuxNodeModel, process: asyncio.subprocess.Process, channel: socket.socket) -> None:
        self.process = process
        self._channel = channel
        self._server = asyncio.create_task(_serve(model, channel, self))
        # when the kernel started it: a process later found under its pid is someone else's
        self._started = process_start_time(process.pid)

    async def finished(self) -> int:
        """Wait for the command itself to end; its exit status. (What it left running in the
        background goes on, as on a real node, until ``close`` or the node's reboot.)"""
        return await self.process.wait()

    @property
    def serving(self) -> bool:
        """Whether some process of the command's still holds the channel (a background job)."""
        return not self._server.done()

    async def served(self) -> None:
        """Wait until every process holding the channel has ended."""
        await asyncio.shield(self._server)

    def when_served(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every process holding the channel has ended (or ``close``)."""
        self._server.add_done_callback(lambda _: callback())

    async def close(self) -> None:
        """Kill what still runs — the command and whatever it started in the background (its
        process group: the node's processes are the host's, and none may outlive the session or
        the node's reboot) — and stop serving (idempotent). Killed first: a server still answering
        would otherwise wait for a caller that only the kill ends. Then the command's exit is
        awaited, not asyncio's ``wait()``, which also waits for every output pipe to close — and a
        job that left the group (a ``setsid``, a daemon) may hold one for ever (the node's going
        down ends those: ``NodeMounts.end_processes``). ``NodeCommandStuck`` if the command has
        not ended within ``REAP_TIMEOUT`` of the kill: the lab's fault, named, never a silent hang."""
        self._kill_group()
        await stop_task(self._server)
        if not await poll_until(self._exited, REAP_TIMEOUT, 0.02):
            raise NodeCommandStuck(
                f"command {self.process.pid} was killed, but had not ended within {REAP_TIMEOUT:.0f} s: "
                f"{process_summary(self.process.pid)}; its process group: "
                f"{', '.join(process_summary(p) for p in group_members(self.process.pid)) or 'empty'}")
        self._channel.close()

    async def _exited(self) -> bool:
        return self.process.returncode is not None

    def _kill_group(self) -> None:
        # The group's id is the command's pid, which the kernel keeps allocated while any member
        # lives. Once they all ended (the command reaped, nothing left in the background) the pid
        # is free, and may already be another group's leader — another command's shell, another
        # node's namespace holder, whose node then lost its root: a process under that pid that
        # started at another time is not ours, and its group is left alone.
        if process_start_time(self.process.pid) in (self._started, None):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


class NodeCommandStuck(RuntimeError):
    """A node's command that was killed and still did not end (the lab's fault, with its processes)."""


def group_members(pgid: int) -> list[int]:
    """The host's processes in process group ``pgid`` (``/proc/PID/stat``'s fifth field)."""
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and (found := process_stat(int(entry))) is not None and int(found[1][2]) == pgid]


async def start_on_node(model: LinuxNodeModel, mounts: NodeMounts, command: str) -> NodeCommand:
    """Start ``command`` on the node as ``sh -c`` runs it (stdin, stdout and stderr pipes); its
    text reaches the shell through a descriptor, never a command line (``nodemounts.argv``)."""
    await asyncio.to_thread(_sync_proc_locked, model)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    handed: list[int] = []
    try:
        handed += [command_file(command), handed_over(theirs.fileno())]
        process = await asyncio.create_subprocess_exec(
            *mounts.argv(*handed), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, pass_fds=handed, start_new_session=True)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()  # the node's processes hold it now: it reads as ended once they all have
        for fd in handed:
            os.close(fd)
    return NodeCommand(model, process, ours)


async def run_on_node(model: LinuxNodeModel, mounts: NodeMounts, command: str, stdin: bytes = b"") -> CommandResult:
    """Run ``command`` on the node as ``sh -c`` runs it, ``stdin`` its whole input, and wait for
    whatever it left running that still holds the channel; how it ended."""
    running = await start_on_node(model, mounts, command)
    try:
        stdout, stderr = await running.process.communicate(stdin)
        code = await running.finished()
        await running.served()  # and what it left running in the background
    finally:
        await running.close()
    return CommandResult(code, stdout, stderr)
