"""SIGTERM (what CI sends on cancel or timeout) cleans up exactly like Ctrl-C: no mitmdump left
listening, no xdist worker left running, no scratch directory left behind — and a controller
killed outright still takes its workers and proxies with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.harness.cli.commands import is_mitmdump, marked_processes
from tests.support import HANG

pytestmark = pytest.mark.slow


def _wait(condition: object, what: str, timeout: float = HANG) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _start(tmp_path: Path, workflows: tuple[str, ...] = ("runtime-add", "change")) -> tuple[subprocess.Popen[bytes], str]:
    token = uuid.uuid4().hex
    env = {**os.environ, "PROXYFLEET_TEST_RUN": token, "TMPDIR": str(tmp_path)}
    log = (tmp_path / "run.log").open("wb")
    # Ctrl-C's disposition as in a terminal: a job a shell starts in the background inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt for it.
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "conformance", "--nodes", "2",
                                *(f"--workflow={w}" for w in workflows)], env=env, cwd=tmp_path,
                               stdout=log, stderr=log, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    marker = f"PROXYFLEET_TEST_RUN={token}"
    _wait(lambda: sum(map(is_mitmdump, marked_processes(marker))) >= len(workflows),
          "every lab's proxy to run")
    return process, marker


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("workflows", [("runtime-add", "change"), ("runtime-add",)], ids=["workers", "in-process"])
def test_a_stop_signal_tears_everything_down(tmp_path: Path, how: signal.Signals, workflows: tuple[str, ...]) -> None:
    process, marker = _start(tmp_path, workflows)
    process.send_signal(how)
    # What is judged is that everything is gone, not how fast: two labs' orderly teardown on a
    # loaded runner took over 60 s. The bound only turns a hang into a failure.
    process.wait(timeout=HANG)
    said = (tmp_path / "run.log").read_text()
    # neither a pass nor a failure: 130, as a shell reports a command stopped by Ctrl-C
    assert process.returncode == 130 and "INTERRUPTED" in said, said[-3000:]
    _wait(lambda: not marked_processes(marker), "every child process to exit", timeout=HANG)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith("proxyfleet-")]
    assert leftovers == [], leftovers  # scratch and lab directories are gone


def test_a_killed_controller_takes_its_workers_and_proxies_with_it(tmp_path: Path) -> None:
    process, marker = _start(tmp_path)
    process.kill()  # SIGKILL: no handler runs in the controller
    process.wait(timeout=HANG)
    _wait(lambda: not marked_processes(marker), "the workers and proxies to follow their parent", timeout=HANG)
