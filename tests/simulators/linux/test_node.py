"""A simulated Linux node over real SSH: OpenSSH's client and asyncssh's run a reconciler's
commands on it, streaming both ways, as its one user with a key, and nobody else gets in."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import certifi
import pytest

from proxyfleet.simulators.linux.node import NO_SHELL, LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import RHCOS_NODE

CANNOT_MOUNT = host_cannot_mount()
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}")
SYSTEM_CAS = Path(certifi.where()).read_bytes()
KEY = asyncssh.generate_private_key("ssh-ed25519")


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LinuxNode]:
    running = LinuxNode(LinuxNodeConfig("worker-a", "127.0.0.1", 0, tmp_path / "worker-a",
                                        asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()],
                                        RHCOS_NODE, SYSTEM_CAS))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def connect(node: LinuxNode, key: asyncssh.SSHKey = KEY, user: str = "core") -> asyncssh.connect:
    known = asyncssh.import_known_hosts(f"[127.0.0.1]:{node.port} {node.host_key_openssh}\n")
    return asyncssh.connect("127.0.0.1", node.port, username=user, client_keys=[key], known_hosts=known)


async def test_commands_stream_both_ways_and_end_with_the_shells_status(node: LinuxNode) -> None:
    async with connect(node) as conn:
        # no input given: the command runs at once, as with OpenSSH (stdin open, unused)
        active = await conn.run("sudo systemctl is-active kubelet", check=False)
        assert (active.exit_status, active.stdout) == (0, "active\n")
        big = os.urandom(1 << 20)
        echoed = await conn.run("cat; echo done >&2; exit 7", input=big, encoding=None, check=False)
        assert (echoed.exit_status, echoed.stdout, echoed.stderr) == (7, big, b"done\n")
        process = await conn.create_process("read line; echo \"got $line\"")
        process.stdin.write("a line\n")
        assert await asyncio.wait_for(process.stdout.readline(), 30) == "got a line\n"
        await process.wait()
        refused = await conn.run(check=False)  # a shell request with no command
        assert refused.exit_status == 1 and refused.stderr == NO_SHELL
    assert node.commands_run == 3


async def test_only_its_user_with_an_authorized_key_gets_in(node: LinuxNode) -> None:
    with pytest.raises(asyncssh.PermissionDenied):
        async with connect(node, user="Core"):
            pass
    with pytest.raises(asyncssh.PermissionDenied):
        async with connect(node, key=asyncssh.generate_private_key("ssh-ed25519")):
            pass


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client (openssh-client)")
async def test_openssh_runs_a_reconcile_on_the_node(node: LinuxNode, tmp_path: Path) -> None:
    key_file = tmp_path / "id_ed25519"
    KEY.write_private_key(key_file)
    key_file.chmod(0o600)
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{node.port} {node.host_key_openssh}\n")
    script = ("set -e; sudo install -D -m 0644 /dev/stdin /etc/mco/proxy.env; "
              "sudo systemctl daemon-reload; sudo systemctl restart crio kubelet; "
              "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value crio)/environ | grep PROXY")
    drop_ins = "".join(f"mkdir -p /etc/systemd/system/{u}.d && printf '[Service]\\nEnvironmentFile=/etc/mco/proxy.env\\n'"
                       f" > /etc/systemd/system/{u}.d/10-mco-default-env.conf; " for u in RHCOS_NODE.services)
    done = await asyncio.to_thread(
        subprocess.run, ["ssh", "-i", str(key_file), "-p", str(node.port), "-o", "BatchMode=yes",
                         "-o", f"UserKnownHostsFile={tmp_path / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
                         "core@127.0.0.1", drop_ins + script],
        input="HTTPS_PROXY=http://proxy.corp.internal:3128\n", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "HTTPS_PROXY=http://proxy.corp.internal:3128\n"), done.stderr
    assert node.model.systemd.running["kubelet.service"].environment["HTTPS_PROXY"] == "http://proxy.corp.internal:3128"
