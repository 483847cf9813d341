"""``proxyfleet cluster`` and ``proxyfleet fleet --kubeconfig`` composed by hand, as a user would."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from proxyfleet.harness.cli import main
from tests.harness.cli.commands import proxyfleet
from tests.support import HANG, wait_until


async def start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "proxyfleet.harness", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def kubectl_json(kubeconfig: Path, *args: str) -> dict[str, object]:
    process = await asyncio.create_subprocess_exec(
        "kubectl", *args, "-o", "json", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)})
    out, err = await process.communicate()
    assert process.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_cluster_and_fleet_commands(tmp_path: Path) -> None:
    cluster = await start("cluster", "--state-dir", str(tmp_path / "cluster"), "--node-grace-seconds", "5")
    kubeconfig = tmp_path / "cluster" / "kubeconfig"
    fleet = None
    try:
        await wait_until(lambda: kubeconfig.exists(), what="the kubeconfig")
        proxy = await kubectl_json(kubeconfig, "get", "proxy", "cluster")
        assert proxy["kind"] == "Proxy"
        fleet = await start("fleet", "--nodes", "2", "--state-dir", str(tmp_path / "fleet"),
                            "--kubeconfig", str(kubeconfig), "--heartbeat-seconds", "0.5")

        async def two_ready_nodes() -> bool:
            nodes = await kubectl_json(kubeconfig, "get", "nodes")
            ready = [n for n in nodes["items"]  # type: ignore[union-attr]
                     if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])]
            return len(ready) == 2

        await wait_until(two_ready_nodes, what="two Ready nodes")
    finally:
        for process in (fleet, cluster):
            if process is not None:
                process.send_signal(signal.SIGTERM)
        for process in (fleet, cluster):
            if process is not None:
                await asyncio.wait_for(process.communicate(), HANG)
    assert cluster.returncode == 0 and fleet is not None and fleet.returncode == 0


def test_bad_install_config_is_one_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "install-config.yaml"
    config.write_text("proxy: [unclosed")
    result = CliRunner().invoke(main, ["cluster", "--state-dir", str(tmp_path / "c"), "--install-config", str(config)])
    assert result.exit_code == 1
    assert "install-config is not valid YAML" in result.output


def test_a_state_directory_others_can_write_is_refused_before_anything_starts(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant a link where the kubeconfig goes
    result = proxyfleet("cluster", "--state-dir", str(shared), cwd=tmp_path, timeout=HANG)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"Error: --state-dir {shared} is owned by ") and "others can write it" in result.stderr
    assert "Traceback" not in result.stderr and list(shared.iterdir()) == []
