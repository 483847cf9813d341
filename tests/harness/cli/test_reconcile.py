"""``proxyfleet reconcile`` as an operator process: it starts against a cluster's kubeconfig, says
what it reconciles, stops cleanly on SIGTERM, and refuses a bad kubeconfig with one clear line."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.harness.cli.commands import proxyfleet
from tests.support import HANG


async def start_reconciler(plane: ControlPlane) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "reconcile", "--kubeconfig", str(plane.kubeconfig_path),
        "--max-unavailable", "3", stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)


async def test_it_says_what_it_reconciles(plane: ControlPlane) -> None:
    process = await start_reconciler(plane)
    assert process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stderr.readline(), HANG)
        assert b"reconciling Windows instances of openshift-windows-machine-config-operator/windows-instances" in line
        assert b"maxUnavailable 3" in line
    finally:
        process.kill()
        await process.communicate()


@pytest.mark.parametrize("lines_first", [1, 2])
async def test_sigterm_soon_after_start_stops_it_cleanly(plane: ControlPlane, lines_first: int) -> None:
    # A SIGTERM during start-up or right after it: handled (not the default action), and the watch
    # threads end before the interpreter does (a thread inside a TLS read at exit aborts it).
    process = await start_reconciler(plane)
    assert process.stderr is not None
    try:
        for _ in range(lines_first):
            await asyncio.wait_for(process.stderr.readline(), HANG)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), HANG)
    assert process.returncode == 0, err.decode()[-2000:]


def test_a_kubeconfig_it_cannot_use_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    result = proxyfleet("reconcile", "--kubeconfig", "kubeconfig", cwd=tmp_path, timeout=HANG)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot load kubeconfig kubeconfig") and "Traceback" not in result.stderr
