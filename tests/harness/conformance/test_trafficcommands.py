"""A traffic probe's command: the destination is a single-quoted PowerShell literal (data, even
when cmd.exe runs the line), the program's own exit status is the command's, and what a probe
cannot carry is refused before a command exists."""

from __future__ import annotations

import pytest

from proxyfleet.core.nodessh import MAX_COMMAND, encoded_command
from proxyfleet.core.probetargets import MAX_URL, ProbeTargetError
from proxyfleet.harness.conformance.trafficcommands import (
    fetch_command,
    native_call_script,
    pull_command,
)
from proxyfleet.simulators.windows.cmdshell import run_line
from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session
from tests.support import ps

# What cmd.exe, OpenSSH's default shell, would run as a second command (echo, redirected into a file)
REPRODUCTION = "http://site.example/?a=1&echo x>C:\\k\\f.txt"


async def test_the_command_exits_with_the_programs_status_and_1_when_it_cannot_start(machine: WindowsMachine) -> None:
    failed = await ps(machine, native_call_script("curl.exe", ["-sS", "-f"], "https://quay.io/"))
    assert (failed.exit_code, failed.stderr) == (6, "curl: (6) Could not resolve host: quay.io\n")
    missing = await ps(machine, native_call_script("nosuch.exe", [], "x"))
    assert missing.exit_code == 1 and "The term 'nosuch.exe' is not recognized" in missing.stderr


async def test_even_a_value_a_shell_would_run_stays_data_under_cmd(machine: WindowsMachine) -> None:
    """The carrier alone (before any check of the value): cmd.exe reads only the encoded command."""
    machine.filesystem.mkdir("C:\\k")
    command = encoded_command(native_call_script("curl.exe", ["-sS", "-f"], REPRODUCTION))
    result = await run_line(Interpreter(Session(machine)), command)
    assert not machine.filesystem.exists("C:\\k\\f.txt")  # no echo ran
    assert result.exit_code == 6 and "Could not resolve host: site.example" in result.stderr


def test_what_a_probe_cannot_carry_has_no_command() -> None:
    with pytest.raises(ProbeTargetError, match="is not a URL character"):
        fetch_command(REPRODUCTION)
    with pytest.raises(ProbeTargetError, match="invalid reference format"):
        pull_command("quay.io/a:1 --creds=x")
    assert pull_command("quay.io/a:1").startswith("powershell.exe ")


def test_the_longest_url_still_fits_a_windows_command_line() -> None:
    longest = "https://site.example/" + "%7E" * ((MAX_URL - 21) // 3)
    assert len(longest) <= MAX_URL
    assert len(fetch_command(longest)) <= MAX_COMMAND  # encoded_command raises beyond it
