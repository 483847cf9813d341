"""Start the lab's mitmdump by forking a process that has already imported mitmproxy.

A mitmdump start cost about half a second of CPU, most of it importing mitmproxy: in a 10-node run
of every scenario, 29 mitmdump processes took 22 s of the run's 108 s of CPU. Here one fork server
per lab process imports it once, and each start is a fork of that server calling the same entry
point (``mitmproxy.tools.main.mitmdump``) with the same arguments: the same program, started in a
fraction of the time.

The forked mitmdump gets its own session (its process group is what a stop ends), dies with the
fork server (``PR_SET_PDEATHSIG``), and its exit status comes back on the connection that asked for
it. The fork server ends, and takes its mitmdumps with it, when the lab process's end of its stdin
pipe closes — whichever thread started it, and however the lab process ended (a thread-bound
parent-death signal would fire when the thread that started it finished). A connection closed
before its mitmdump ended (a lab process gone) ends that mitmdump's group with SIGTERM.

What differs from a fresh interpreter: the process's command line (``/proc/PID/cmdline``) is the
fork server's, with no arguments (its name, ``comm``, is ``mitmdump``); and a module that reads an
environment variable when it is imported read it when the fork server started (the environment a
start asks for is set before mitmdump runs). ``PROXYFLEET_MITMDUMP_FORK=0`` starts every mitmdump
as a fresh interpreter instead (what the A/B measurement in the README compares).
"""

from __future__ import annotations

import asyncio
import atexit
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
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from proxyfleet.core import owneddirs
from proxyfleet.core.lifecycle import die_with_parent
from proxyfleet.core.privatedirs import runtime_directory
from proxyfleet.core.startupclock import StartupClock

# What mitmdump and the lab's addon import: loaded once, in the fork server.
PRELOAD = ("mitmproxy.tools.main", "mitmproxy.tools.dump", "mitmproxy.tools.cmdline", "mitmproxy.addons",
           "mitmproxy.addons.script", "proxyfleet.core.looplag", "proxyfleet.simulators.network",
           "proxyfleet.simulators.proxy.authentication", "proxyfleet.simulators.proxy.guards")
SERVER_ENTRY = "from proxyfleet.simulators.proxy.forkserver import serve; serve()"
SWITCH = "PROXYFLEET_MITMDUMP_FORK"  # "0": a fresh interpreter for every mitmdump
DIRECTORY_PREFIX = "mitmfork-"
REQUEST_LIMIT = 1 << 20
ANSWER_LOOK_SECONDS = 0.5  # how often a start waiting for the server's answer looks at the server
PR_SET_NAME = 15


class ForkServerError(RuntimeError):
    """The fork server could not start a mitmdump (it said why, or it exited)."""


def enabled() -> bool:
    """Whether mitmdump starts by fork: on Linux with pidfds (5.3+), unless switched off."""
    return (os.environ.get(SWITCH, "1") != "0" and sys.platform.startswith("linux")
            and hasattr(os, "pidfd_open"))


# --- the fork server (its own process) ---------------------------------------------------------

def serve() -> None:
    """The fork server's main: ``python -c SERVER_ENTRY FD``, FD a listening Unix socket it inherited
    (made by the lab process before it started this one, so a start never races its bind)."""
    listener = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD:
        importlib.import_module(name)
    gc.freeze()  # what is imported stays put: children do not copy pages the collector would touch
    _Server(listener).run()


@dataclass
class _Child:
    pid: int
    connection: socket.socket | None


@dataclass
class _Server:
    listener: socket.socket
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    pending: dict[socket.socket, bytes] = field(default_factory=dict)  # connections still sending their request
    children: dict[int, _Child] = field(default_factory=dict)  # pidfd -> child
    running: dict[socket.socket, _Child] = field(default_factory=dict)

    def run(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
        while True:
            for key, _ in self.selector.select():
                if key.data == "accept":
                    connection, _ = self.listener.accept()
                    self.pending[connection] = b""
                    self.selector.register(connection, selectors.EVENT_READ, "request")
                elif key.data == "parent":
                    if not os.read(sys.stdin.fileno(), 4096):  # the lab process is gone
                        self._end_all()
                        return
                elif key.data == "request":
                    self._read_request(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "running":
                    self._connection_event(key.fileobj)  # type: ignore[arg-type]
                else:
                    self._reap(key.fileobj)  # type: ignore[arg-type]

    def _read_request(self, connection: socket.socket) -> None:
        data = connection.recv(65536)
        buffered = self.pending[connection] + data
        if not data or len(buffered) > REQUEST_LIMIT:
            self._drop(connection)
            return
        if b"\n" not in buffered:
            self.pending[connection] = buffered
            return
        del self.pending[connection]
        try:
            request = json.loads(buffered.split(b"\n", 1)[0])
            pid = self._fork(request)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            self._answer(connection, {"error": f"{type(exc).__name__}: {exc}"})
            self._drop(connection)
            return
        child = _Child(pid, connection)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = child
        self.running[connection] = child
        self.selector.modify(connection, selectors.EVENT_READ, "running")
        self.selector.register(pidfd, selectors.EVENT_READ, "reap")
        self._answer(connection, {"pid": pid})

    def _fork(self, request: dict[str, Any]) -> int:
        arguments = [str(a) for a in request["argv"]]
        output, cwd = str(request["output"]), str(request["cwd"])
        environment = {str(k): str(v) for k, v in dict(request["env"]).items()}
        sys.stdout.flush()
        sys.stderr.flush()
        ready, readied = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            _run_mitmdump(arguments, output, cwd, environment, readied)
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
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGTERM)  # nobody is left to stop it

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
        self.pending.pop(connection, None)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(connection)
        connection.close()

    def _end_all(self) -> None:
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)


def _run_mitmdump(arguments: list[str], output: str, cwd: str, environment: dict[str, str],
                  readied: int) -> NoReturn:
    """In the forked child: become a mitmdump started as ``mitmdump ARGUMENTS``, its output to
    ``output``, in a session of its own (``readied`` is written to once it leads it)."""
    code = 1
    try:
        os.setsid()
        die_with_parent()  # the fork server (single-threaded: the signal is bound to it)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, b"mitmdump")
        os.write(readied, b"!")
        os.closerange(3, 1 << 16)  # the server's listener, other starts' connections, pidfds
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        sys.argv = ["-c", *arguments]  # as ``python -c …`` gives it: mitmdump's messages name it so
        from mitmproxy.tools.main import mitmdump

        mitmdump(arguments)
        code = 0
    except SystemExit as exc:  # what the interpreter would make of it
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # reported as an uncaught exception would be, then exit 1
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# --- the lab process's side --------------------------------------------------------------------

class ForkedProcess:
    """A mitmdump the fork server started: its pid, and its exit status (``returncode``, negative
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
            # The fork server is gone without saying: its mitmdumps end with it (SIGTERM).
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
    """A running fork server, started by (and ending with) this process: ``start()``, then
    ``spawn`` as often as needed; ``stop()`` ends it and every mitmdump it started."""

    process: subprocess.Popen[bytes]
    directory: Path
    owner: int  # the pid that started it: a forked lab process starts its own

    @classmethod
    def start(cls) -> ForkServer:
        parent = runtime_directory() / "sockets"
        owneddirs.sweep(parent, DIRECTORY_PREFIX)
        directory = owneddirs.make(parent, DIRECTORY_PREFIX)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(directory / "s"))
            listener.listen(64)
            with (directory / "output").open("wb") as output:
                process = subprocess.Popen([sys.executable, "-c", SERVER_ENTRY, str(listener.fileno())],
                                           pass_fds=[listener.fileno()], stdin=subprocess.PIPE, stdout=output,
                                           stderr=output, start_new_session=True)
        except BaseException:
            owneddirs.remove(directory)
            raise
        finally:
            listener.close()
        return cls(process, directory, os.getpid())

    @property
    def address(self) -> str:
        return str(self.directory / "s")

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def said(self) -> str:
        """The end of the fork server's own output (an import that failed says so there)."""
        try:
            return (self.directory / "output").read_text(errors="replace")[-2000:] or "(no output)\n"
        except OSError:
            return "(no output)\n"

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()  # its signal to end, and to end its mitmdumps
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        owneddirs.remove(self.directory)

    async def spawn(self, arguments: list[str], output: Path, startup_limit: float,
                    stalled: Callable[[float], float] = lambda since: 0.0) -> ForkedProcess:
        """Start ``mitmdump ARGUMENTS`` by fork, its output appended to ``output``, with this
        process's environment and working directory. A start right after ``start()`` waits while
        the server imports mitmproxy (about as long as one mitmdump's own start), as long as it
        keeps working at it (``StartupClock``: ``startup_limit``, the lab's ``stalled`` seconds
        excused)."""
        try:
            reader, writer = await asyncio.open_unix_connection(self.address, limit=REQUEST_LIMIT)
        except OSError as exc:  # nothing listens: it has ended
            raise ForkServerError(f"the mitmdump fork server did not start it: it is gone ({exc.strerror}); "
                                  f"its output ended:\n{self.said()}") from None
        try:
            request = {"argv": arguments, "output": str(output), "cwd": os.getcwd(), "env": dict(os.environ)}
            writer.write((json.dumps(request) + "\n").encode())
            await writer.drain()
            clock = StartupClock(startup_limit, lambda: self.process.pid, stalled)
            line = b""
            while not line:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(ANSWER_LOOK_SECONDS):
                        line = await reader.readline()
                        break  # an answer, or the server's end (b"")
                if self.process.poll() is not None or clock.expired():
                    break
            answer = json.loads(line) if line else {}
            if "pid" not in answer:
                why = answer.get("error") or (f"it did not answer ({clock.why()})" if self.process.poll() is None
                                              else f"it exited; its output ended:\n{self.said()}")
                raise ForkServerError(f"the mitmdump fork server did not start it: {why}")
        except BaseException:
            writer.close()
            raise
        return ForkedProcess(int(answer["pid"]), reader, writer)


_SERVER: ForkServer | None = None


def _server() -> ForkServer:
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        if _SERVER is not None and _SERVER.owner == os.getpid():
            _SERVER.stop()
        _SERVER = ForkServer.start()
    return _SERVER


@atexit.register
def _stop_server() -> None:
    if _SERVER is not None and _SERVER.owner == os.getpid():
        _SERVER.stop()


async def spawn(arguments: list[str], output: Path, startup_limit: float,
                stalled: Callable[[float], float] = lambda since: 0.0) -> ForkedProcess:
    """``ForkServer.spawn`` on this process's fork server (started on first use, and again if it
    has ended)."""
    return await _server().spawn(arguments, output, startup_limit, stalled)
