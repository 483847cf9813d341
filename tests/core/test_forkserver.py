"""The fork server starts a preloaded program by fork, in a session of its own, with its output in a
file or the streams handed over; reports its exit status; ends a program whose asker is gone; and,
when its starter is gone, sends each program SIGTERM once and waits for it before it exits."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from proxyfleet.core.forkserver import ForkServer, ForkServerError
from tests.support import HANG, wait_until

PROGRAMS = "tests.core.forkprograms"
LIMIT = 60.0


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def test_a_program_runs_by_fork_in_a_session_of_its_own_and_its_exit_status_comes_back(
        server: ForkServer, tmp_path: Path) -> None:
    log = tmp_path / "log"
    forked = await server.spawn(f"{PROGRAMS}:echo", ["3"], log, LIMIT, name="echo-test")
    async with asyncio.timeout(HANG):
        assert await forked.wait() == 3
    # stdin was /dev/null (nothing upper-cased); its parent the server; named as asked
    assert _text(log) == f"parent={server.pid} session-leader=True name=echo-test\n"


async def test_a_program_that_raises_process_exit_ends_through_the_interpreters_shutdown(
        server: ForkServer, tmp_path: Path) -> None:
    for how, said in (("process", "atexit ran\n"), ("return", "")):
        log = tmp_path / f"{how}.log"
        forked = await server.spawn(f"{PROGRAMS}:exits", [how], log, LIMIT)
        async with asyncio.timeout(HANG):
            assert await forked.wait() == 4
        assert _text(log) == said  # a plain return ends the process at once, as mitmdump's exit does


async def test_a_signal_that_ends_a_program_is_its_exit_status(server: ForkServer, tmp_path: Path) -> None:
    forked = await server.spawn(f"{PROGRAMS}:killed", ["SIGKILL"], tmp_path / "log", LIMIT)
    async with asyncio.timeout(HANG):
        assert await forked.wait() == -9


async def test_a_request_the_server_cannot_run_is_answered_with_why(server: ForkServer, tmp_path: Path) -> None:
    with pytest.raises(ForkServerError, match=r"the test fork server did not start it: .*module:function"):
        await server.spawn("no-colon", [], tmp_path / "log", LIMIT)
    with pytest.raises(ForkServerError, match="ModuleNotFoundError"):
        await server.spawn("tests.core.no_such_module:main", [], tmp_path / "log", LIMIT)
    with socket.socket(socket.AF_UNIX) as connection:  # two descriptors handed over: all three or none
        connection.connect(server.address)
        request = {"program": f"{PROGRAMS}:echo", "argv": ["0"], "output": None, "cwd": "/", "env": {}}
        socket.send_fds(connection, [(json.dumps(request) + "\n").encode()], [0, 1])
        answer = json.loads(await asyncio.to_thread(connection.recv, 4096))
    assert "2 descriptors handed over" in answer["error"]


async def test_a_program_whose_asker_is_gone_gets_sigterm_once(server: ForkServer, tmp_path: Path) -> None:
    fifo, log = tmp_path / "release", tmp_path / "log"
    os.mkfifo(fifo)
    forked = await server.spawn(f"{PROGRAMS}:held", [str(fifo), str(log)], tmp_path / "out", LIMIT)
    await wait_until(lambda: "ready" in _text(log), what="the program to start")
    forked._writer.close()  # the asker's connection ends (the lab process that asked is gone)
    await wait_until(lambda: "SIGTERM" in _text(log), what="the server to end the orphaned program")
    assert server.process is not None
    server.process.stdin.close()  # type: ignore[union-attr] - and then its starter goes too
    await wait_until(lambda: _alive(forked.pid) and server.process.poll() is None  # type: ignore[union-attr]
                     and _text(log) == "ready\nSIGTERM\n", what="the server to wait for it")
    fifo.write_text("go")
    async with asyncio.timeout(HANG):
        await asyncio.to_thread(server.process.wait)
    assert _text(log) == "ready\nSIGTERM\n"  # once: not again when the server ended
    assert not _alive(forked.pid)


async def test_a_server_whose_starter_is_gone_waits_for_its_programs_cleanup(server: ForkServer,
                                                                              tmp_path: Path) -> None:
    fifo, log = tmp_path / "release", tmp_path / "log"
    os.mkfifo(fifo)
    forked = await server.spawn(f"{PROGRAMS}:held", [str(fifo), str(log)], tmp_path / "out", LIMIT)
    await wait_until(lambda: "ready" in _text(log), what="the program to start")
    assert server.process is not None and server.process.stdin is not None
    server.process.stdin.close()  # its starter's end of the pipe: as when the starter is killed
    await wait_until(lambda: "SIGTERM" in _text(log), what="the server to end its program")
    # the program is still cleaning up: the server has not exited (its parent-death signal would
    # send the program a second SIGTERM in the middle of it)
    assert server.process.poll() is None and _alive(forked.pid)
    fifo.write_text("go")
    async with asyncio.timeout(HANG):
        assert await forked.wait() == 5
        await asyncio.to_thread(server.process.wait)
    assert _text(log) == "ready\nSIGTERM\n"


async def test_another_process_attaches_by_the_handle_and_does_not_stop_it(server: ForkServer,
                                                                           tmp_path: Path) -> None:
    attached = ForkServer.attach("the test fork server", server.handle())
    assert (attached.pid, attached.address, attached.process) == (server.pid, server.address, None)
    assert attached.alive()
    forked = await attached.spawn(f"{PROGRAMS}:echo", ["0"], tmp_path / "log", LIMIT)
    async with asyncio.timeout(HANG):
        assert await forked.wait() == 0
    attached.stop()  # not its to stop
    assert server.running()
    with pytest.raises(ForkServerError, match="not a fork server's handle"):
        ForkServer.attach("the test fork server", "not-a-handle")
