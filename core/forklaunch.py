"""A stand-in process for a program a fork server starts (``core/forkserver``): whoever starts this
one sees it as the program itself — the program reads this process's stdin and writes its stdout
and stderr (the descriptors are handed over), the signals this process is sent reach the program,
and this process exits as the program did (with its status, or by its signal).

    python -I -m proxyfleet.core.forklaunch HANDLE PROGRAM NAME [ARGUMENT ...]

HANDLE is the fork server's (``ForkServer.handle``), PROGRAM its ``module:function``, NAME the
forked process's name; the arguments are the program's. Only the standard library and
``core/lifecycle`` are imported, so it starts in a few milliseconds.

An xdist worker is started this way (``harness/cli/workerfork``): execnet starts "a Python" with
pipes and speaks its protocol on them; this process is that Python's stand-in.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from types import FrameType

from proxyfleet.core.lifecycle import die_with_parent

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def format_handle(pid: int, address: str) -> str:
    """A fork server's handle, ``PID:ADDRESS`` (its socket's path): what ``parse_handle`` reads."""
    return f"{pid}:{address}"


def parse_handle(handle: str) -> tuple[int, str]:
    """(pid, socket address) of a fork server's handle; ValueError for anything else."""
    pid, _, address = handle.partition(":")
    if not pid.isdigit() or not address.startswith("/"):
        raise ValueError(f"not a fork server's handle (PID:ADDRESS): {handle[:200]!r}")
    return int(pid), address


class _Answers:
    """The server's answers on one connection, one JSON line each."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffered = b""

    def next(self) -> dict[str, object] | None:
        """The next answer; None when the server closed the connection first (or said nonsense)."""
        while b"\n" not in self.buffered:
            data = self.connection.recv(4096)  # retried after a forwarded signal (PEP 475)
            if not data:
                return None
            self.buffered += data
        line, self.buffered = self.buffered.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None


def launch(handle: str, program: str, name: str, arguments: list[str]) -> int:
    """Start ``program(arguments)`` on the fork server ``handle`` with this process's standard
    streams, forward signals to it, and return its exit status (negative: the signal that ended
    it), as ``subprocess`` reports one. A signal that comes before the program has started is
    forwarded once it has."""
    die_with_parent()  # whoever started this one expects the program to go with it
    program_pid: list[int] = []
    early: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        if not program_pid:
            early.append(signum)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(program_pid[0], signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    _, address = parse_handle(handle)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(address)
    request = {"program": program, "name": name, "argv": arguments, "output": None, "cwd": os.getcwd(),
               "env": dict(os.environ)}
    socket.send_fds(connection, [(json.dumps(request) + "\n").encode()], [0, 1, 2])
    # The program has its own copies now: the pipes end when it ends, not when this one does.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    answers = _Answers(connection)
    started = answers.next() or {}
    pid = started.get("pid")
    if not isinstance(pid, int):
        print(f"forklaunch: the fork server did not start {program}: {started.get('error') or 'no answer'}",
              file=sys.stderr)
        return 1
    # Held while the queued signals go out, so one that comes meanwhile is not forwarded before them.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    program_pid.append(pid)
    for pending in early:
        forward(pending, None)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    code = (answers.next() or {}).get("returncode")
    if not isinstance(code, int):
        print(f"forklaunch: the fork server ended before {program} did", file=sys.stderr)
        return 1
    return code


def main() -> None:
    if len(sys.argv) < 4:
        print("usage: python -I -m proxyfleet.core.forklaunch HANDLE PROGRAM NAME [ARGUMENT ...]", file=sys.stderr)
        sys.exit(2)
    code = launch(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
    if code < 0:  # ended by a signal: end the same way, so whoever waits sees what happened
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP take no disposition
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
