"""Output formatting: Out-String and redirection to a file."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_out_string_and_redirection_to_file(machine: WindowsMachine) -> None:
    await ps(machine, "Get-Service kubelet > C:\\k\\svc.txt")
    raw = machine.filesystem.read_bytes("C:\\k\\svc.txt")
    assert raw.startswith(b"\xff\xfe")  # Windows PowerShell 5.1 writes UTF-16LE for '>'
    assert "kubelet" in raw.decode("utf-16")
    text = await ps(machine, "(Get-Service sshd | Out-String).Contains('OpenSSH SSH Server')")
    assert text.stdout.strip() == "True"
