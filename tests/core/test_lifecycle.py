"""SIGTERM behaves like Ctrl-C, a child asked to die with its parent does, and a process group is
ended politely, then surely."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from proxyfleet.core.lifecycle import exit_description, interrupt_on_sigterm, process_alive, terminate_group
from tests.support import HANG


def test_sigterm_raises_keyboard_interrupt() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    interrupt_on_sigterm()
    try:
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before os.kill returns to us
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_child_dies_with_its_parent() -> None:
    # parent starts a grandchild that asks to die with it, prints its pid and exits
    parent = textwrap.dedent("""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c",
            "from proxyfleet.core.lifecycle import die_with_parent; import time; die_with_parent(); "
            "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready"
        print(child.pid, flush=True)
    """)
    result = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=HANG, check=True)
    pid = int(result.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] in ("Z", "X"):  # exited, not yet reaped
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the child outlived its parent")


async def _group(script: str) -> tuple[asyncio.subprocess.Process, int]:
    """A process in a session of its own with a grandchild in its group; both ids once ready."""
    process = await asyncio.create_subprocess_exec(
        "sh", "-c", f"{script} & echo $!; wait", stdout=asyncio.subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    return process, int((await process.stdout.readline()).strip())


async def test_terminate_group_ends_the_whole_group_politely() -> None:
    process, grandchild = await _group("sleep 60")
    await terminate_group(process, grace=10)
    assert process.returncode == -signal.SIGTERM and _ends(grandchild)


async def test_terminate_group_kills_what_ignores_sigterm() -> None:
    process, grandchild = await _group("trap '' TERM; sleep 60")
    await terminate_group(process, grace=0.2)  # sh ignores TERM too (trap inherited by the wait)
    assert _ends(grandchild) and process.returncode is not None
    process, grandchild = await _group("sleep 60")
    await terminate_group(process, grace=None)  # a crash: SIGKILL at once
    assert process.returncode == -signal.SIGKILL and _ends(grandchild)


def _ends(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is gone within ``seconds`` (a signalled process dies a moment later)."""
    deadline = time.monotonic() + seconds
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for init to reap it."""
    if not process_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_process_alive() -> None:
    assert process_alive(os.getpid())
    assert not process_alive(0) and not process_alive(-1)
    finished = subprocess.Popen(["true"])
    finished.wait()  # reaped: its id names no process now
    assert not process_alive(finished.pid)


def test_exit_description_says_how_a_child_ended_as_a_shell_does() -> None:
    assert exit_description(0) == "exit status 0"
    assert exit_description(1) == "exit status 1"
    assert exit_description(-signal.SIGTERM) == "killed by SIGTERM"
    assert exit_description(-signal.SIGKILL) == "killed by SIGKILL"
    assert exit_description(-200) == "killed by signal 200"


def test_sigterm_under_an_asyncio_runner_is_ctrl_c_the_main_task_is_cancelled() -> None:
    """As Ctrl-C does: the main task is cancelled and the runner raises KeyboardInterrupt once it
    ended; no other task is hit by a KeyboardInterrupt raised wherever the loop happened to be."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (the runner then takes Ctrl-C)
    interrupt_on_sigterm()
    seen: list[str] = []

    async def background() -> None:
        try:
            await asyncio.Event().wait()
        except BaseException as exc:
            seen.append(f"background: {type(exc).__name__}")
            raise

    async def main() -> None:
        helper = asyncio.create_task(background())
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("main: cancelled")
            raise
        finally:
            helper.cancel()
            await asyncio.wait([helper])

    try:
        with asyncio.Runner() as runner:
            with pytest.raises(KeyboardInterrupt):
                runner.run(main())
            when_interrupted = list(seen)  # before the runner closes (and cancels whatever is left)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    assert when_interrupted == ["main: cancelled", "background: CancelledError"]
