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


async def start_reconciler(plane: ControlPlane) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "reconcile", "--kubeconfig", str(plane.kubeconfig_path),
        "--max-unavailable", "3", stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)


async def test_it_says_what_it_reconciles(plane: ControlPlane) -> None:
    process = await start_reconciler(plane)
    assert process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stderr.readline(), 60)
        assert b"reconciling Windows instances of openshift-windows-machine-config-operator/windows-instances" in line
        assert b"maxUnavailable 3" in line
    finally:
        process.kill()
        await process.communicate()


@pytest.mark.xfail(strict=False, reason="known bug: a SIGTERM within about a second of start ends the process "
                                        "with SIGTERM's default action or a SIGABRT at interpreter shutdown "
                                        "(found while writing this test; see the issue 10 note)")
async def test_sigterm_soon_after_start_stops_it_cleanly(plane: ControlPlane) -> None:
    process = await start_reconciler(plane)
    assert process.stderr is not None
    try:
        for _ in range(2):  # what it reconciles, then how to watch progress: it is now waiting for a signal
            await asyncio.wait_for(process.stderr.readline(), 60)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()[-2000:]


def test_a_kubeconfig_it_cannot_use_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    result = proxyfleet("reconcile", "--kubeconfig", "kubeconfig", cwd=tmp_path, timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot load kubeconfig kubeconfig") and "Traceback" not in result.stderr
