"""The stand-in process is the forked program to whoever started it: its streams are the program's,
the signals it is sent reach the program, it exits as the program did, and killed outright it takes
the program with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proxyfleet.core.forklaunch import format_handle, parse_handle
from proxyfleet.core.forkserver import ForkServer
from tests.support import HANG

PROGRAMS = "tests.core.forkprograms"


def _launch(server: ForkServer, program: str, *arguments: str, **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-I", "-m", "proxyfleet.core.forklaunch", server.handle(),
                             f"{PROGRAMS}:{program}", "launched-test", *arguments], **popen)  # type: ignore[call-overload]


def _wait_for(condition: object, what: str, launched: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + HANG
    while not condition():  # type: ignore[operator]
        if launched is not None and launched.poll() is not None:
            raise AssertionError(f"the launcher exited ({launched.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_the_program_reads_and_writes_the_launchers_streams_and_its_status_is_the_launchers(
        server: ForkServer) -> None:
    launched = _launch(server, "echo", "3", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = launched.communicate(b"hello\n", timeout=HANG)
    assert (launched.returncode, stdout) == (3, b"HELLO\n")
    # forked from the server (not a child of the stand-in), a session leader, named as asked
    assert stderr.decode() == f"parent={server.pid} session-leader=True name=launched-test\n"


def test_signals_reach_the_program_and_a_death_by_signal_is_mirrored(server: ForkServer, tmp_path: Path) -> None:
    fifo, log = tmp_path / "release", tmp_path / "log"
    os.mkfifo(fifo)
    launched = _launch(server, "held", str(fifo), str(log))
    _wait_for(lambda: "ready" in _text(log), "the program to start", launched)
    launched.send_signal(signal.SIGINT)
    launched.send_signal(signal.SIGTERM)
    # Both, once each; not in the order sent: the program's handler for the first may be
    # interrupted by the second's (CPython runs a handler at any bytecode), so either may log first.
    _wait_for(lambda: sorted(_text(log).splitlines()) == ["SIGINT", "SIGTERM", "ready"],
              "both signals to reach the program")
    fifo.write_text("go")
    assert launched.wait(timeout=HANG) == 5
    killed = _launch(server, "killed", "SIGKILL")
    assert killed.wait(timeout=HANG) == -signal.SIGKILL


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _has(mask: str, signum: int) -> bool:
    return bool(int(mask, 16) >> (signum - 1) & 1)


def test_a_signal_that_comes_before_the_program_has_started_reaches_it_once_it_has(
        server: ForkServer, tmp_path: Path) -> None:
    fifo, log = tmp_path / "release", tmp_path / "log"
    os.mkfifo(fifo)
    # A stopped server cannot answer: the launcher's request waits in its socket, and the program's
    # pid cannot be known while the launcher's handler takes the signal.
    os.kill(server.pid, signal.SIGSTOP)
    try:
        launched = _launch(server, "held", str(fifo), str(log))
        _wait_for(lambda: _has(_status(launched.pid)["SigCgt"], signal.SIGTERM),
                  "the launcher's handlers", launched)
        launched.send_signal(signal.SIGTERM)

        def handled() -> bool:
            # Not pending, and asleep again (in its wait for the server): its Python handler ran.
            status = _status(launched.pid)
            return (status["State"].startswith("S") and not _has(status["SigPnd"], signal.SIGTERM)
                    and not _has(status["ShdPnd"], signal.SIGTERM))

        _wait_for(handled, "the launcher to take the signal", launched)
        assert _text(log) == ""  # the program has not started
    finally:
        os.kill(server.pid, signal.SIGCONT)
    # Sent on once the pid came: to a program that has not yet set its handler, SIGTERM's default
    # ends it, and the launcher ends the same way; to one that has, the handler logs it.
    _wait_for(lambda: launched.poll() is not None or "SIGTERM" in _text(log).splitlines(),
              "the early signal to reach the program")
    if launched.poll() is None:
        fifo.write_text("go")
        assert launched.wait(timeout=HANG) == 5
    else:
        assert launched.returncode == -signal.SIGTERM
    assert _text(log).splitlines().count("SIGTERM") <= 1


def test_a_launcher_killed_outright_takes_its_program_with_it(server: ForkServer, tmp_path: Path) -> None:
    fifo, log = tmp_path / "release", tmp_path / "log"
    os.mkfifo(fifo)
    launched = _launch(server, "held", str(fifo), str(log))
    _wait_for(lambda: "ready" in _text(log), "the program to start", launched)
    launched.kill()  # no handler runs: the server sees its connection close
    launched.wait(timeout=HANG)
    _wait_for(lambda: "SIGTERM" in _text(log), "the server to end the program")
    fifo.write_text("go")


def test_a_handle_is_the_servers_pid_and_socket_path() -> None:
    assert parse_handle(format_handle(41, "/run/proxyfleet/sockets/x/s")) == (41, "/run/proxyfleet/sockets/x/s")
    for wrong in ("", "41", "x:/s", "41:relative/s"):
        with pytest.raises(ValueError, match="not a fork server's handle"):
            parse_handle(wrong)


def test_a_server_that_cannot_start_the_program_makes_the_launcher_fail_saying_why(server: ForkServer) -> None:
    launched = _launch(server, "no_such_program", stderr=subprocess.PIPE)
    _, stderr = launched.communicate(timeout=HANG)
    assert launched.returncode == 1
    assert b"the fork server did not start tests.core.forkprograms:no_such_program: AttributeError" in stderr
