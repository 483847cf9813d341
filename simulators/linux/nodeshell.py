"""One command on a simulated Linux node: a real ``/bin/sh`` on the node's tree (``nodemounts``),
with the node-aware commands (``nodecommands``) answered by the lab's model of the node.

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
import shutil
import socket
from dataclasses import dataclass

from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel, commands_for, run_command
from proxyfleet.simulators.linux.nodemounts import CHANNEL_FD, PROC, NodeMounts

REPLIES = "/run/proxyfleet"  # on the node: the lock and each call's output


def shim_text(name: str) -> str:
    """The node's ``name``: a script that asks the lab over the session's channel."""
    fd = CHANNEL_FD
    return (f"#!/bin/sh\n"
            f"# {name} on a proxyfleet-simulated node, answered by the lab's model of the node\n"
            f"exec 8>>{REPLIES}/lock && flock 8 || exit 126\n"
            f"printf '%s\\0' \"$$\" \"$#\" {name} \"$@\" >&{fd} || exit 126\n"
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


def install_commands(model: LinuxNodeModel) -> None:
    """Put the flavour's node-aware commands in the node's ``/usr/bin`` (idempotent)."""
    replies = model.root / REPLIES.lstrip("/")
    replies.mkdir(parents=True, exist_ok=True)
    replies.chmod(0o700)
    for name in commands_for(model.flavour):
        path = model.root / "usr/bin" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(shim_text(name))
        path.chmod(0o755)


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


async def _serve(model: LinuxNodeModel, channel: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    buffer = bytearray()
    replies = model.root / REPLIES.lstrip("/")
    while True:
        data = await loop.sock_recv(channel, 65536)
        if not data:
            return  # every process of the session has ended (or closed fd 9)
        buffer += data
        for pid, name, args in parse_requests(buffer):
            outcome = await asyncio.to_thread(run_command, model, name, args)
            await asyncio.to_thread(sync_proc, model)
            (replies / f"out.{pid}").write_text(outcome.stdout)
            (replies / f"err.{pid}").write_text(outcome.stderr)
            await loop.sock_sendall(channel, f"{outcome.code}\n".encode())


async def run_on_node(model: LinuxNodeModel, mounts: NodeMounts, command: str, stdin: bytes = b"") -> CommandResult:
    """Run ``command`` with ``sh -c`` on the node; its node-aware commands served meanwhile."""
    await asyncio.to_thread(sync_proc, model)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    try:
        process = await asyncio.create_subprocess_exec(
            *mounts.argv(command, theirs.fileno()), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, pass_fds=(theirs.fileno(),))
        theirs.close()  # the node's processes hold it now: it reads as ended once they all have
        server = asyncio.create_task(_serve(model, ours))
        try:
            stdout, stderr = await process.communicate(stdin)
            await server  # ends when the last process holding the channel does
        finally:
            if not server.done():
                server.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await server
            if process.returncode is None:
                process.kill()
                await process.wait()
    finally:
        theirs.close()
        ours.close()
    assert process.returncode is not None
    return CommandResult(process.returncode, stdout, stderr)

