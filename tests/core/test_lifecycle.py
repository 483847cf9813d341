"""SIGTERM behaves like Ctrl-C, and a child asked to die with its parent does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from proxyfleet.core.lifecycle import interrupt_on_sigterm


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
    result = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=30, check=True)
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
