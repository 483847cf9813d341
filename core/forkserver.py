"""A fork server: a process that imports a program's modules once and then starts the program,
request by request, by forking itself — the same program with the same arguments, started in a
fraction of the time an interpreter takes to import it again.

Two programs are started this way: the lab's mitmdump (``simulators/proxy/forkserver``) and the
xdist workers of a conformance run (``harness/cli/workerfork``). A request names the program
(``module:function``, the module among those the server preloaded) and gives its arguments,
working directory and environment; its standard streams are either a log file (``output``) or the
asker's own descriptors, passed with the request (``SCM_RIGHTS``: a stand-in process, ``forklaunch``,
hands a forked program the pipes it was started with).

A forked program gets a session of its own (its process group is what a stop ends), dies with the
fork server (``PR_SET_PDEATHSIG``), and its exit status comes back on the connection that asked
for it. The fork server ends, and takes its programs with it, when its starter's end of its stdin
pipe closes — whichever thread started it, and however that process ended (a thread-bound
parent-death signal would fire when the thread that started it finished). A connection closed
before its program ended (the asker gone) ends that program's group with SIGTERM; each program is
sent SIGTERM once, and the server waits for its programs before it exits, so none of them is sent
a second one in the middle of its own cleanup.

What differs from a fresh interpreter: the process's command line (``/proc/PID/cmdline``) is the
fork server's, with no arguments (its name, ``comm``, is the request's); a module that reads an
environment variable when it is imported read it when the fork server started (the environment a
start asks for is set before the program runs); and what the preloaded modules set up at import
time is shared, not made again (``gc.freeze``: the children do not copy pages the collector would
touch).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from proxyfleet.core import owneddirs
from proxyfleet.core.forklaunch import format_handle, parse_handle
from proxyfleet.core.lifecycle import die_with_parent
from proxyfleet.core.privatedirs import runtime_directory
from proxyfleet.core.startupclock import StartupClock

SERVER_ENTRY = "from proxyfleet.core.forkserver import serve; serve()"
REQUEST_LIMIT = 1 << 20
ANSWER_LOOK_SECONDS = 0.5  # how often a start waiting for the server's answer looks at the server
PR_SET_NAME = 15
STREAMS = 3  # stdin, stdout, stderr: what a request may hand over
# How long a server whose starter is gone waits for its programs' own cleanup before it kills them
# (a bound on a hang, never reached by a program that ends on SIGTERM).
END_GRACE_SECONDS = 120.0


class ForkServerError(RuntimeError):
    """The fork server could not start a program (it said why, or it exited)."""


def supported() -> bool:
    """Whether programs can be started by fork here: on Linux with pidfds (5.3+)."""
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")


# --- the fork server (its own process) ---------------------------------------------------------

def serve() -> None:
    """The fork server's main: ``python -c SERVER_ENTRY FD MODULES``, FD a listening Unix socket it
    inherited (made by its starter before it started this one, so a start never races its bind),
    MODULES a JSON list of the modules to import before the first start."""
    listener = socket.socket(fileno=int(sys.argv[1]))
    for name in json.loads(sys.argv[2]):
        importlib.import_module(name)
    gc.freeze()  # what is imported stays put: children do not copy pages the collector would touch
    _Server(listener).run()


@dataclass
class _Child:
    pid: int
    connection: socket.socket | None
    signalled: bool = False


@dataclass
class _Server:
    listener: socket.socket
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    pending: dict[socket.socket, tuple[bytes, list[int]]] = field(default_factory=dict)  # requests still coming
    children: dict[int, _Child] = field(default_factory=dict)  # pidfd -> child
    running: dict[socket.socket, _Child] = field(default_factory=dict)

    def run(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
        while True:
            for key, _ in self.selector.select():
                if key.data == "accept":
                    connection, _ = self.listener.accept()
                    self.pending[connection] = (b"", [])
                    self.selector.register(connection, selectors.EVENT_READ, "request")
                elif key.data == "parent":
                    if not os.read(sys.stdin.fileno(), 4096):  # the starter is gone
                        self._end_all()
                        return
                elif key.data == "request":
                    self._read_request(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "running":
                    self._connection_event(key.fileobj)  # type: ignore[arg-type]
                else:
                    self._reap(key.fileobj)  # type: ignore[arg-type]

    def _read_request(self, connection: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(connection, 65536, STREAMS)
        except OSError:
            data, fds = b"", []
        buffered, held = self.pending[connection]
        buffered, held = buffered + data, held + fds
        self.pending[connection] = (buffered, held)  # dropping the connection closes what it handed over
        if not data or len(buffered) > REQUEST_LIMIT or len(held) > STREAMS:
            self._drop(connection)
            return
        if b"\n" not in buffered:
            return
        del self.pending[connection]
        try:
            request = json.loads(buffered.split(b"\n", 1)[0])
            if held and len(held) != STREAMS:
                raise ValueError(f"{len(held)} descriptors handed over; a request hands over all {STREAMS} or none")
            pid = self._fork(request, held)
        except Exception as exc:  # a request it cannot run (a program that is not there…): said, served on
            # (in a forked child the program's exit is a SystemExit and passes through)
            self._answer(connection, {"error": f"{type(exc).__name__}: {exc}"})
            self._drop(connection)
            return
        finally:
            _close_all(held)  # the child has its own copies
        child = _Child(pid, connection)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = child
        self.running[connection] = child
        self.selector.modify(connection, selectors.EVENT_READ, "running")
        self.selector.register(pidfd, selectors.EVENT_READ, "reap")
        self._answer(connection, {"pid": pid})

    def _fork(self, request: dict[str, Any], streams: list[int]) -> int:
        program = _program(str(request["program"]))
        arguments = [str(a) for a in request["argv"]]
        output = None if request.get("output") is None else str(request["output"])
        if output is None and not streams:
            raise ValueError("a request names an output file or hands over its standard streams")
        name, cwd = str(request.get("name") or "program"), str(request["cwd"])
        environment = {str(k): str(v) for k, v in dict(request["env"]).items()}
        sys.stdout.flush()
        sys.stderr.flush()
        ready, readied = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            _run_child(program, arguments, name, output, streams, cwd, environment, readied)
        os.close(readied)
        try:
            # Answered once it leads its own session, as a start_new_session child has before exec:
            # a stop right after the answer must find its process group.
            os.read(ready, 1)
        finally:
            os.close(ready)
        return pid

    def _connection_event(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            if connection.recv(4096):
                return  # nothing more is expected; ignored
        child = self.running.pop(connection)
        child.connection = None
        self._drop(connection)
        self._terminate(child)  # nobody is left to stop it

    def _terminate(self, child: _Child) -> None:
        if not child.signalled:
            child.signalled = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)

    def _reap(self, pidfd: int) -> None:
        child = self.children.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(child.pid, 0)
        if child.connection is not None:
            self.running.pop(child.connection, None)
            self._answer(child.connection, {"returncode": os.waitstatus_to_exitcode(status)})
            self._drop(child.connection)

    def _answer(self, connection: socket.socket, answer: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            connection.sendall((json.dumps(answer) + "\n").encode())

    def _drop(self, connection: socket.socket) -> None:
        held = self.pending.pop(connection, (b"", []))[1]
        _close_all(held)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(connection)
        connection.close()

    def _end_all(self) -> None:
        """SIGTERM to every program still running (once each), then wait for them, at most
        ``END_GRACE_SECONDS``, before SIGKILL: exiting first would send each a second SIGTERM (its
        parent-death signal) in the middle of its cleanup."""
        for child in self.children.values():
            self._terminate(child)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.listener)
        deadline = time.monotonic() + END_GRACE_SECONDS
        while self.children:
            ready = self.selector.select(max(0.0, deadline - time.monotonic()))
            if not ready:
                for child in self.children.values():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child.pid, signal.SIGKILL)
                return
            for key, _ in ready:
                if key.data == "reap":
                    self._reap(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "running":
                    self._connection_event(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "request":
                    self._drop(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "parent":
                    self.selector.unregister(sys.stdin.fileno())


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _program(name: str) -> Callable[[list[str]], int | None]:
    """``module:function``, the module imported (by the server's preload, or now)."""
    module, _, function = name.partition(":")
    if not module or not function:
        raise ValueError(f"a program is named module:function, not {name!r}")
    found = getattr(importlib.import_module(module), function)
    if not callable(found):
        raise TypeError(f"{name} is not a function")
    return found  # type: ignore[no-any-return]


def _run_child(program: Callable[[list[str]], int | None], arguments: list[str], name: str, output: str | None,
               streams: list[int], cwd: str, environment: dict[str, str], readied: int) -> NoReturn:
    """In the forked child: run ``program(arguments)`` in a session of its own (``readied`` is
    written to once it leads it), its standard streams the handed-over ``streams`` or ``output``.

    A program that returns, raises SystemExit or fails ends the process at once (``os._exit``,
    after flushing its streams), as mitmdump's own exit does; one that wants the interpreter's
    whole shutdown (threads joined, ``atexit``) raises ``ProcessExit``."""
    code = 1
    try:
        os.setsid()
        die_with_parent()  # the fork server (single-threaded: the signal is bound to it)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode()[:15])
        os.write(readied, b"!")
        if streams:
            for target, fd in enumerate(streams):
                os.dup2(fd, target)
            # Closed below as the server's; its frames, still on this stack, must not close them
            # again when a ProcessExit unwinds through them (the numbers may be the program's by then).
            streams.clear()
        else:
            assert output is not None
            null = os.open(os.devnull, os.O_RDONLY)
            log = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
        os.closerange(3, 1 << 16)  # the server's listener, other starts' connections, pidfds
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        code = program(arguments) or 0
    except ProcessExit:
        raise
    except SystemExit as exc:  # what the interpreter would make of it
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # reported as an uncaught exception would be, then exit 1
        traceback.print_exc()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


class ProcessExit(SystemExit):
    """Raised by a program in a forked child that ends as an interpreter does: the fork server's
    frames unwind, and the process exits through the interpreter's own shutdown."""


# --- a starter's side ----------------------------------------------------------------------------


class ForkedProcess:
    """A program the fork server started: its pid, and its exit status (``returncode``, negative
    for a signal, as asyncio reports it) once it has ended."""

    def __init__(self, pid: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._reader, self._writer = reader, writer
        self._ended = asyncio.Event()
        self._watch = asyncio.ensure_future(self._watch_exit())

    async def _watch_exit(self) -> None:
        try:
            line = await self._reader.readline()
        except OSError:
            line = b""
        try:
            self.returncode = int(json.loads(line)["returncode"])
        except (ValueError, KeyError, TypeError):
            # The fork server is gone without saying: its programs end with it (SIGTERM).
            await _until_gone(self.pid)
            self.returncode = -signal.SIGTERM
        finally:
            self._writer.close()
            self._ended.set()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode


async def _until_gone(pid: int) -> None:
    """Until ``pid`` has ended (a pidfd turns readable when its process exits, ours or not)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


@dataclass
class ForkServer:
    """A running fork server: ``start()`` one (it ends with this process), or ``attach()`` to one
    another process started (its address and pid handed down); then ``spawn`` as often as needed.
    ``stop()`` ends a server this process started, and every program it started."""

    what: str  # how messages name it: "the mitmdump fork server"
    address: str
    pid: int
    process: subprocess.Popen[bytes] | None = None  # None: attached, not ours to stop
    directory: Path | None = None
    owner: int = 0  # the pid that started it: a forked lab process starts its own

    @classmethod
    def start(cls, what: str, preload: Sequence[str], directory_prefix: str) -> ForkServer:
        parent = runtime_directory() / "sockets"
        owneddirs.sweep(parent, directory_prefix)
        directory = owneddirs.make(parent, directory_prefix)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(directory / "s"))
            listener.listen(64)
            with (directory / "output").open("wb") as output:
                process = subprocess.Popen([sys.executable, "-c", SERVER_ENTRY, str(listener.fileno()),
                                            json.dumps(list(preload))],
                                           pass_fds=[listener.fileno()], stdin=subprocess.PIPE, stdout=output,
                                           stderr=output, start_new_session=True)
        except BaseException:
            owneddirs.remove(directory)
            raise
        finally:
            listener.close()
        return cls(what, str(directory / "s"), process.pid, process, directory, os.getpid())

    @classmethod
    def attach(cls, what: str, handle: str) -> ForkServer:
        """A server another process started, by the ``handle`` it gave (``handle()``)."""
        try:
            pid, address = parse_handle(handle)
        except ValueError as exc:
            raise ForkServerError(f"{what}: {exc}") from None
        return cls(what, address, pid)

    def handle(self) -> str:
        """What another process attaches with (``attach``): ``PID:ADDRESS``."""
        return format_handle(self.pid, self.address)

    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            return Path(f"/proc/{self.pid}").exists() and Path(self.address).exists()
        except OSError:
            return False

    def alive(self) -> bool:
        """Running, and usable by this process (one this process started, or attached to)."""
        return (self.process is None or self.owner == os.getpid()) and self.running()

    def said(self) -> str:
        """The end of the fork server's own output (an import that failed says so there)."""
        if self.directory is None:
            return "(its output is its starter's to read)\n"
        try:
            return (self.directory / "output").read_text(errors="replace")[-2000:] or "(no output)\n"
        except OSError:
            return "(no output)\n"

    def stop(self) -> None:
        """End a server this process started (closing its stdin: its signal to end its programs
        too); an attached one is left to its starter."""
        if self.process is None or self.owner != os.getpid():
            return
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()  # its signal to end, and to end its programs
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.directory is not None:
            owneddirs.remove(self.directory)

    async def spawn(self, program: str, arguments: list[str], output: Path, startup_limit: float,
                    stalled: Callable[[float], float] = lambda since: 0.0, name: str = "") -> ForkedProcess:
        """Start ``program(arguments)`` by fork, its output appended to ``output``, with this
        process's environment and working directory. A start right after ``start()`` waits while
        the server imports its modules (about as long as one program's own start), as long as it
        keeps working at it (``StartupClock``: ``startup_limit``, the lab's ``stalled`` seconds
        excused)."""
        try:
            reader, writer = await asyncio.open_unix_connection(self.address, limit=REQUEST_LIMIT)
        except OSError as exc:  # nothing listens: it has ended
            raise ForkServerError(f"{self.what} did not start it: it is gone ({exc.strerror}); "
                                  f"its output ended:\n{self.said()}") from None
        try:
            request = {"program": program, "name": name, "argv": arguments, "output": str(output),
                       "cwd": os.getcwd(), "env": dict(os.environ)}
            writer.write((json.dumps(request) + "\n").encode())
            await writer.drain()
            clock = StartupClock(startup_limit, lambda: self.pid, stalled)
            line = b""
            while not line:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(ANSWER_LOOK_SECONDS):
                        line = await reader.readline()
                        break  # an answer, or the server's end (b"")
                if not self.running() or clock.expired():
                    break
            answer = json.loads(line) if line else {}
            if "pid" not in answer:
                why = answer.get("error") or (f"it did not answer ({clock.why()})" if self.running()
                                              else f"it exited; its output ended:\n{self.said()}")
                raise ForkServerError(f"{self.what} did not start it: {why}")
        except BaseException:
            writer.close()
            raise
        return ForkedProcess(int(answer["pid"]), reader, writer)
