"""The fleet driven by the real OpenSSH client (``ssh``, ``sftp``), as a person or a script would."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.windows.node import WindowsNode

pytestmark = [
    pytest.mark.openssh,
    pytest.mark.skipif(shutil.which("ssh") is None or shutil.which("sftp") is None,
                       reason="OpenSSH client (ssh, sftp) is not installed"),
]


async def ssh(fleet: Fleet, node: WindowsNode, command: bytes | str, *options: str,
              stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    argv = fleet.ssh_command(node)
    process = await asyncio.create_subprocess_exec(
        *argv[:-1], *options, argv[-1], command if isinstance(command, bytes) else command.encode(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(stdin), 30)
    assert process.returncode is not None
    return process.returncode, out, err


async def sftp_batch(fleet: Fleet, node: WindowsNode, batch: str) -> tuple[int, bytes, bytes]:
    process = await asyncio.create_subprocess_exec(
        "sftp", "-b", "-", "-i", str(fleet.client_key_path), "-P", str(node.port),
        "-o", f"UserKnownHostsFile={fleet.state_dir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
        "-o", "IdentitiesOnly=yes", f"{node.username}@{node.address}",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(batch.encode()), 30)
    assert process.returncode is not None
    return process.returncode, out, err


async def test_ssh_exec_with_host_key_checking(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    code, out, _ = await ssh(fleet, node, "Get-Service kubelet | Select-Object -ExpandProperty Status")
    assert (code, out) == (0, b"Running\r\n")
    code, _, err = await ssh(fleet, node, "Get-Item C:\\nope")
    assert code == 1 and b"ItemNotFoundException" in err
    code, out, _ = await ssh(fleet, node, 'powershell.exe -NoProfile -Command "[Environment]::MachineName"')
    assert (code, out) == (0, node.name.upper().encode() + b"\r\n")
    code, out, _ = await ssh(fleet, node, "cmd.exe /c hostname")
    assert (code, out) == (0, node.name.upper().encode() + b"\r\n")


async def test_host_key_mismatch_is_refused_by_the_client(fleet: Fleet, tmp_path: Path) -> None:
    node, other = fleet.nodes
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{node.address}]:{node.port} {other.host_key_openssh}\n")
    argv = fleet.ssh_command(node)
    argv[argv.index(f"UserKnownHostsFile={fleet.state_dir / 'known_hosts'}")] = f"UserKnownHostsFile={wrong}"
    process = await asyncio.create_subprocess_exec(*argv, "hostname", stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    assert process.returncode == 255 and b"HOST IDENTIFICATION HAS CHANGED" in err


async def test_garbage_bytes_are_refused_and_the_node_keeps_serving(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    code, _, _ = await ssh(fleet, node, b"\xff\xfe\xfd garbage")
    assert code != 0
    code, out, _ = await ssh(fleet, node, "hostname")
    assert (code, out) == (0, node.name.upper().encode() + b"\r\n")


async def test_sftp_put_get_and_list(fleet: Fleet, tmp_path: Path) -> None:
    node = fleet.nodes[0]
    local = tmp_path / "bundle.crt"
    local.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n")
    back = tmp_path / "back.crt"
    code, out, err = await sftp_batch(fleet, node, f"put {local} /C:/k/ca-bundle.crt\nls /C:/k\n"
                                                   f"cd /C:/k\npwd\nget ca-bundle.crt {back}\n")
    assert code == 0, err
    assert b"/C:/k/ca-bundle.crt" in out and b"Remote working directory: /C:/k" in out
    assert back.read_bytes() == local.read_bytes()
    code, out, _ = await ssh(fleet, node, "Test-Path C:\\k\\ca-bundle.crt")
    assert out == b"True\r\n"
