"""What sshd starts for a session: exec requests in the default shell read from the registry
(cmd.exe as Windows ships, or PowerShell), and the interactive PowerShell prompt, with CRLF line ends."""

from __future__ import annotations

import asyncio
import os

import pytest

from proxyfleet.simulators.fleet import Fleet
from tests.support import run_on, run_powershell


@pytest.mark.parametrize("term", ["xterm", None], ids=["TERM=xterm", "TERM-unset"])
async def test_interactive_shell_shows_a_powershell_prompt(fleet: Fleet, term: str | None) -> None:
    # Without TERM (as under tox or cron), ssh asks for a PTY with an empty terminal type; the
    # console must still end lines at the CR a terminal sends.
    node = fleet.nodes[0]
    argv = fleet.ssh_command(node)
    environment = {k: v for k, v in os.environ.items() if k != "TERM"} | ({"TERM": term} if term else {})
    process = await asyncio.create_subprocess_exec(
        *argv[:-1], "-tt", argv[-1], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=environment)
    assert process.stdin is not None and process.stdout is not None
    transcript = b""

    async def read_until(marker: bytes) -> None:
        nonlocal transcript
        while marker not in transcript:
            try:
                chunk = await asyncio.wait_for(process.stdout.read(4096), 10)  # type: ignore[union-attr]
            except TimeoutError:
                raise AssertionError(f"no {marker!r} within 10 s; the session showed {transcript!r}") from None
            assert chunk, transcript
            transcript += chunk

    await read_until(b"PS C:\\Users\\Administrator> ")
    process.stdin.write(b"$greeting = 'hi from ' + (hostname)\r")
    process.stdin.write(b"$greeting\r")
    await read_until(b"hi from " + node.name.upper().encode())
    process.stdin.write(b"exit\r")
    await asyncio.wait_for(process.wait(), 10)
    assert b"Windows PowerShell" in transcript


async def test_exec_forms(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    raw = await run_on(fleet, node, "Get-Service kubelet | Select-Object -ExpandProperty Status")
    assert (raw.stdout, raw.exit_status) == ("Running\r\n", 0)
    wrapped = await run_on(fleet, node, 'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass '
                                        '-Command "hostname; exit 4"')
    assert wrapped.stdout == node.name.upper() + "\r\n"
    assert wrapped.exit_status == 1  # -Command exits 1 when its last statement failed
    cmd = await run_on(fleet, node, "cmd.exe /c echo hello")
    assert (cmd.stdout, cmd.exit_status) == ("hello\r\n", 0)
    failed = await run_on(fleet, node, "Get-Item C:\\nope")
    assert failed.exit_status == 1
    assert failed.stderr.startswith("Get-Item : Cannot find path 'C:\\nope' because it does not exist.\r\n")


async def test_a_node_as_windows_ships_runs_exec_requests_in_cmd(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    raw = await run_on(cmd_fleet, node, "[Environment]::GetEnvironmentVariable('Path', 'Machine')")
    assert raw.exit_status == 9009 & 0xFF  # asyncssh sends exit statuses modulo 256
    assert "is not recognized as an internal or external command" in raw.stderr
    wrapped = await run_powershell(cmd_fleet, node, "[Environment]::GetEnvironmentVariable('OS', 'Machine')")
    assert (wrapped.stdout, wrapped.exit_status) == ("Windows_NT\r\n", 0)
    assert (await run_on(cmd_fleet, node, "echo %OS%& ver")).stdout.startswith("Windows_NT\r\n")
    # An administrator sets DefaultShell: the next session runs PowerShell.
    await run_powershell(cmd_fleet, node, "New-ItemProperty -Path HKLM:\\SOFTWARE\\OpenSSH -Name DefaultShell "
                                          "-Value C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe "
                                          "-PropertyType String -Force | Out-Null")
    switched = await run_on(cmd_fleet, node, "[Environment]::GetEnvironmentVariable('OS', 'Machine')")
    assert (switched.stdout, switched.exit_status) == ("Windows_NT\r\n", 0)
