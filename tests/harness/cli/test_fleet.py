"""``proxyfleet fleet``: a fleet of nodes a person can log in to with the real ssh client, until
Ctrl-C; bad options refused before anything starts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from tests.harness.cli.commands import proxyfleet, wait_for_line
from tests.support import HANG


def test_the_fleet_serves_ssh_until_ctrl_c(tmp_path: Path) -> None:
    state = tmp_path / "fleet"
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "fleet", "--nodes", "2", "--state-dir",
                                str(state), "--service-stage-seconds", "0", "--default-shell", "powershell"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        wait_for_line(process, "press Ctrl-C to stop", HANG)
        manifest = json.loads((state / "fleet.json").read_text())
        assert len(manifest["nodes"]) == 2
        node = manifest["nodes"][1]
        result = subprocess.run(
            ["ssh", "-i", manifest["private_key"], "-p", str(node["port"]), "-o",
             f"UserKnownHostsFile={state / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", f"{node['username']}@{node['address']}", "[Environment]::MachineName"],
            capture_output=True, text=True, timeout=HANG, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == node["name"].upper() or result.stdout.strip().lower() == node["name"].lower()
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=HANG)
    assert process.returncode == 0, err[-2000:]
    assert "2 Windows nodes listening on port" in out and "fleet stopped" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--nodes", "-1"], "Invalid value for '--nodes'"),
    (["--network", "10.0.0.0/8"], ""),
    (["--linux-flavour", "suse"], "Invalid value for '--linux-flavour': 'suse' is not one of 'debian', 'rhcos'"),
])
def test_bad_options_are_refused_before_anything_starts(tmp_path: Path, args: list[str], message: str) -> None:
    result = proxyfleet("fleet", "--state-dir", "fleet", *args, cwd=tmp_path, timeout=HANG)
    assert result.returncode == 2 if message else result.returncode != 0, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "fleet" / "fleet.json").exists()



@pytest.mark.skipif(host_cannot_mount() is not None, reason=f"{host_cannot_mount()}")
def test_linux_nodes_serve_ssh_beside_windows_ones(tmp_path: Path) -> None:
    state = tmp_path / "fleet"
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "fleet", "--nodes", "1", "--linux", "1",
                                "--state-dir", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(process, "press Ctrl-C to stop", HANG)
        manifest = json.loads((state / "fleet.json").read_text())
        node = next(n for n in manifest["nodes"] if n["kind"] == "linux")
        result = subprocess.run(
            ["ssh", "-i", manifest["private_key"], "-p", str(node["port"]), "-o",
             f"UserKnownHostsFile={state / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", f"{node['username']}@{node['address']}", "systemctl is-active kubelet"],
            capture_output=True, text=True, timeout=HANG, check=False)
        assert (result.returncode, result.stdout) == (0, "active\n"), result.stderr
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=HANG)
    assert process.returncode == 0, err[-2000:]
    assert "1 Windows and 1 Linux (rhcos) nodes listening on port" in out and "a Linux node:  ssh " in out


def test_a_state_directory_others_can_write_is_refused_before_anything_starts(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant a link where the node keys go
    result = proxyfleet("fleet", "--state-dir", str(shared), cwd=tmp_path, timeout=HANG)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"Error: --state-dir {shared} is owned by ") and "others can write it" in result.stderr
    assert "Traceback" not in result.stderr and list(shared.iterdir()) == []
