"""A Linux node over SSH from the reconciler's side: shell commands with their data on stdin, the
boot id, a reboot whose exit status may be lost — against a simulated node over real SSH."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import certifi
import pytest

from proxyfleet.core.linuxssh import LinuxNodeConnection
from proxyfleet.core.nodessh import NodeAddress, ScriptFailed
from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import RHCOS_NODE
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
KEY = asyncssh.generate_private_key("ssh-ed25519")


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LinuxNode]:
    if CANNOT_MOUNT is not None:
        pytest.skip(CANNOT_MOUNT)
    running = LinuxNode(LinuxNodeConfig("worker-a", "127.0.0.1", 0, tmp_path / "worker-a",
                                        asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()],
                                        RHCOS_NODE, Path(certifi.where()).read_bytes()))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_commands_take_their_data_on_stdin_and_failures_say_how_they_ended(node: LinuxNode) -> None:
    async with LinuxNodeConnection(NodeAddress("127.0.0.1", node.port, "core"), KEY, node.host_key_openssh) as ssh:
        assert await ssh.shell("cat > /tmp/x && cat /tmp/x", input="http://u:pw@p:3128\n") == "http://u:pw@p:3128\n"
        with pytest.raises(ScriptFailed, match=r"sh on 127\.0\.0\.1 exited 3: fetching https://\*\*\*:\*\*\*@p failed"):
            await ssh.shell("echo 'fetching https://u:secret@p failed' >&2; exit 3")
        with pytest.raises(TypeError, match="POSIX shell, not PowerShell"):
            await ssh.script("Get-Date")


async def test_a_reboot_shows_as_a_new_boot_id(node: LinuxNode) -> None:
    async with LinuxNodeConnection(NodeAddress("127.0.0.1", node.port, "core"), KEY, node.host_key_openssh) as ssh:
        before = await ssh.boot_time()
        assert before == node.boots[-1].boot_id
        await ssh.request_reboot()
    await wait_until(lambda: len(node.boots) == 2 and node.is_listening, what="the node back from its reboot")
    async with LinuxNodeConnection(NodeAddress("127.0.0.1", node.port, "core"), KEY, node.host_key_openssh) as ssh:
        assert await ssh.boot_time() == node.boots[-1].boot_id != before
