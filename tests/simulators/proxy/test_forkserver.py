"""mitmdump started by fork (``forkserver``) behaves as one started in a fresh interpreter: the
same exit statuses and output, a session of its own, no arguments on its command line; it ends
when whoever asked for it is gone, and with its fork server."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.simulators.proxy import forkserver
from proxyfleet.simulators.proxy.forkserver import ForkServerError
from tests.support import HANG, wait_until

LIMIT = 60.0


def _fresh(arguments: list[str], output: Path) -> int:
    """The same arguments in a fresh interpreter, as the lab started mitmdump before."""
    with output.open("ab") as log:
        return subprocess.run([sys.executable, "-c", "from mitmproxy.tools.main import mitmdump; mitmdump()",
                               *arguments], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                              timeout=HANG, check=False).returncode


def _listening(tmp_path: Path, *extra: str) -> list[str]:
    return ["--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={tmp_path / 'confdir'}", *extra]


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize("arguments", [["--version"], ["--mode", "nonsense"], ["--no-such-flag"],
                                       ["--set", "termlog_verbosity=nonsense"]],
                         ids=["version", "bad-option", "unknown-flag", "error-at-start-up"])
async def test_exit_status_and_output_are_those_of_a_fresh_interpreter(tmp_path: Path, arguments: list[str]) -> None:
    arguments = [*arguments, "--set", f"confdir={tmp_path / 'confdir'}"]
    forked_log, fresh_log = tmp_path / "forked.log", tmp_path / "fresh.log"
    forked = await forkserver.spawn(arguments, forked_log, LIMIT)
    async with asyncio.timeout(HANG):
        status = await forked.wait()
    assert status == await asyncio.to_thread(_fresh, arguments, fresh_log)
    # the same words, line for line (mitmdump stamps its log lines with the time)
    said, expected = (re.sub(r"^\[[\d:.]+\] ", "", log.read_text(), flags=re.MULTILINE) for log in (forked_log, fresh_log))
    assert said.strip() and said == expected, (said, expected)
    assert status == (0 if arguments[0] == "--version" else 1)


async def test_it_runs_in_a_session_of_its_own_named_mitmdump_with_no_arguments_shown(tmp_path: Path) -> None:
    forked = await forkserver.spawn(_listening(tmp_path, "--set", "proxyauth=fleet:s3cret-marker"),
                                    tmp_path / "log", LIMIT)
    try:
        assert os.getsid(forked.pid) == forked.pid and os.getpgid(forked.pid) == forked.pid
        assert Path(f"/proc/{forked.pid}/comm").read_text() == "mitmdump\n"
        assert b"s3cret-marker" not in Path(f"/proc/{forked.pid}/cmdline").read_bytes()
        assert forked.returncode is None
        # the child answers once it leads its session, before it opens its log: no log yet is "not yet"
        await wait_until(lambda: "proxy listening at" in _text(tmp_path / "log"), what="mitmdump to listen")
    finally:
        os.killpg(forked.pid, signal.SIGTERM)  # what a stop sends: mitmdump shuts down cleanly
        async with asyncio.timeout(HANG):
            assert await forked.wait() == 0
    assert _ended(forked.pid)


async def test_a_mitmdump_whose_asker_is_gone_is_ended(tmp_path: Path) -> None:
    server = forkserver.start_server()
    try:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(server.address)
            request = {"program": forkserver.PROGRAM, "argv": _listening(tmp_path), "output": str(tmp_path / "log"),
                       "cwd": str(tmp_path), "env": dict(os.environ)}
            import json

            connection.sendall((json.dumps(request) + "\n").encode())
            answer = b""
            while not answer.endswith(b"\n"):
                answer += await asyncio.to_thread(connection.recv, 4096)
            pid = json.loads(answer)["pid"]
            assert not _ended(pid)
        # the connection closed (the lab process that asked is gone): the fork server ends it
        await wait_until(lambda: _ended(pid), what="the orphaned mitmdump to end")
    finally:
        server.stop()


async def test_the_fork_servers_end_ends_its_mitmdumps(tmp_path: Path) -> None:
    server = forkserver.start_server()
    forked = await server.spawn(forkserver.PROGRAM, _listening(tmp_path), tmp_path / "log", LIMIT)
    assert forked.returncode is None
    server.stop()  # its stdin closes, as when the lab process ends however it ended
    async with asyncio.timeout(HANG):
        await forked.wait()
    assert _ended(forked.pid)
    assert not Path(server.address).exists()


async def test_a_fork_server_that_is_gone_says_so_and_the_next_start_gets_a_new_one(tmp_path: Path) -> None:
    server = forkserver.start_server()
    assert server.process is not None
    server.process.kill()
    server.process.wait()
    with pytest.raises(ForkServerError, match="the mitmdump fork server did not start it: it is gone"):
        await server.spawn(forkserver.PROGRAM, ["--version"], tmp_path / "log", LIMIT)
    server.stop()
    # the process-wide one is started again when it has ended
    first = forkserver._server()
    assert first.process is not None
    first.process.kill()
    first.process.wait()
    forked = await forkserver.spawn(["--version"], tmp_path / "again.log", LIMIT)
    async with asyncio.timeout(HANG):
        assert await forked.wait() == 0
    assert forkserver._server() is not first


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.SWITCH, "0")
    assert not forkserver.enabled()
    monkeypatch.setenv(forkserver.SWITCH, "1")
    assert forkserver.enabled()
