"""The fleet: manifest, addressing, growth, and the ``proxyfleet fleet`` command."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import stat
import sys
from pathlib import Path

import pytest

from proxyfleet.simulators.fleet import (
    DEFAULT_EPHEMERAL,
    LOWEST_PORT,
    Fleet,
    FleetError,
    FleetSettings,
    _free_port,
    ephemeral_ports,
)
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from tests.support import HANG, run_on, wait_until


async def test_manifest_describes_every_node(fleet: Fleet) -> None:
    manifest = json.loads((fleet.state_dir / "fleet.json").read_text())
    key = Path(manifest["private_key"])
    assert key.exists() and stat.S_IMODE(key.stat().st_mode) == 0o600
    nodes = manifest["nodes"]
    assert [n["name"] for n in nodes] == ["win-0001", "win-0002"]
    assert {n["port"] for n in nodes} == {fleet.port}
    assert [n["address"] for n in nodes] == ["127.10.0.1", "127.10.0.2"]
    assert all(n["username"] == "Administrator" and n["host_key"].startswith("ssh-ed25519 ") for n in nodes)
    assert nodes[0]["host_key"] != nodes[1]["host_key"]
    instances = fleet.state_dir / "windows-instances"
    assert {p.name: p.read_text() for p in instances.iterdir()} == {
        "127.10.0.1": "username=Administrator", "127.10.0.2": "username=Administrator"}


async def test_nodes_join_and_leave(fleet: Fleet) -> None:
    node = await fleet.add_node()
    assert node.name == "win-0003" and node.address == "127.10.0.3"
    assert (await run_on(fleet, node, "hostname")).stdout.strip() == "WIN-0003"
    assert (node.ssh_connections, node.ssh_commands) == (1, 1)  # what benchmarks count round trips by
    await fleet.remove_node("win-0001")
    names = [n["name"] for n in json.loads((fleet.state_dir / "fleet.json").read_text())["nodes"]]
    assert names == ["win-0002", "win-0003"]


def test_only_loopback_networks_are_accepted(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="not loopback"):
        FleetSettings(nodes=1, state_dir=tmp_path, network="10.0.0.0/24")


async def test_host_keys_survive_a_restart_of_the_fleet(tmp_path: Path) -> None:
    settings = FleetSettings(nodes=1, state_dir=tmp_path / "f")
    async with Fleet(settings) as first:
        key = first.nodes[0].host_key_openssh
    async with Fleet(settings) as second:
        assert second.nodes[0].host_key_openssh == key


def port_is_free(address: str, port: int) -> bool:
    """No process holds the port. SO_REUSEADDR, as sshd binds: a connection left in TIME_WAIT there
    (whichever end closed first, which depends on the machine's load) is the kernel's, not a
    process left behind."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError:
            return False
        return True


@pytest.mark.openssh
async def test_fleet_command_runs_until_sigterm_and_cleans_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "fleet", "--nodes", "3", "--state-dir", str(state),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        manifest_path = state / "fleet.json"
        await wait_until(lambda: manifest_path.exists(), what="fleet.json")
        manifest = json.loads(manifest_path.read_text())
        node = manifest["nodes"][2]
        ssh = await asyncio.create_subprocess_exec(
            "ssh", "-i", manifest["private_key"], "-p", str(node["port"]),
            "-o", f"UserKnownHostsFile={state / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", f"{node['username']}@{node['address']}", "hostname",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await ssh.communicate()
        assert ssh.returncode == 0, err
        assert out == b"WIN-0003\r\n"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = await asyncio.wait_for(process.communicate(), HANG)
        assert process.returncode == 0, stderr
        assert b"log in:" in stdout and b"fleet stopped" in stderr
        assert all(port_is_free(n["address"], n["port"]) for n in manifest["nodes"])
    finally:
        if process.returncode is None:  # the test failed before the SIGTERM: leave no fleet running
            process.kill()
            await process.wait()
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)


def test_the_ssh_port_is_outside_the_ephemeral_range(tmp_path: Path) -> None:
    # sshd's 22 is below it: the nodes' own outgoing connections never take it while they reboot.
    (tmp_path / "range").write_text("32768\t60999\n")
    assert ephemeral_ports(tmp_path / "range") == (32768, 60999)
    assert ephemeral_ports(tmp_path / "missing") == DEFAULT_EPHEMERAL
    low, high = ephemeral_ports()
    for seed in range(20):
        port = _free_port("127.0.0.1", random.Random(seed))
        assert not low <= port <= high and port >= LOWEST_PORT
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
            taken.bind(("127.0.0.1", port))  # it was free


async def test_a_fleet_listens_outside_the_ephemeral_range(fleet: Fleet) -> None:
    low, high = ephemeral_ports()
    assert not low <= fleet.port <= high


@pytest.mark.skipif(host_cannot_mount() is not None, reason=f"{host_cannot_mount()}")
async def test_a_mixed_fleet_serves_linux_nodes_beside_windows_ones(tmp_path: Path) -> None:
    settings = FleetSettings(nodes=1, linux_nodes=2, linux_flavour="debian", state_dir=tmp_path / "mixed")
    async with Fleet(settings) as fleet:
        manifest = json.loads((fleet.state_dir / "fleet.json").read_text())
        assert [(n["name"], n["kind"], n["address"]) for n in manifest["nodes"]] == [
            ("win-0001", "windows", "127.10.0.1"), ("linux-0001", "linux", "127.10.128.1"),
            ("linux-0002", "linux", "127.10.128.2")]
        assert {n["port"] for n in manifest["nodes"]} == {fleet.port}
        assert manifest["nodes"][1]["flavour"] == "debian" and manifest["nodes"][1]["username"] == "core"
        assert {p.name for p in (fleet.state_dir / "windows-instances").iterdir()} == {"127.10.0.1"}
        linux = fleet.linux_nodes[1]
        # OpenSSH, with the fleet's key and known_hosts, reaches the Linux node's real shell
        ran = await asyncio.to_thread(_run, [*fleet.ssh_command(linux), "grep ^ID= /etc/os-release; systemctl is-active "
                                                                       "containerd"])
        assert ran == (0, "ID=debian\nactive\n")
        # its trust store is the distribution's: Mozilla's ~150 roots, as Debian ships them
        bundle = (linux.root / "etc/ssl/certs/ca-certificates.crt").read_text()
        assert bundle.count("BEGIN CERTIFICATE") == len(settings.linux_public_roots) > 100


def _run(argv: list[str]) -> tuple[int, str]:
    import subprocess

    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout


def test_linux_nodes_need_a_known_flavour_and_a_host_that_can_run_them(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="no Linux node flavour 'suse'; there are: debian, rhcos"):
        FleetSettings(nodes=0, linux_nodes=1, linux_flavour="suse", state_dir=tmp_path)
    with pytest.raises(FleetError, match=r"4 Windows nodes do not fit in 127\.10\.0\.0/29 \(at most 3\)"):
        FleetSettings(nodes=4, state_dir=tmp_path, network="127.10.0.0/29")
