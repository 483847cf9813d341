"""A logon session: its environment (machine and user joined, SSH variables), the environment by
target as [Environment] sees it, and files resolved against its location."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


async def test_session_path_joins_machine_and_user_path(machine: WindowsMachine) -> None:
    result = await ps(machine, "$env:Path")
    assert result.stdout.strip().startswith(r"C:\Windows\system32;")
    assert result.stdout.strip().endswith(r"C:\Users\Administrator\AppData\Local\Microsoft\WindowsApps;")


def test_environment_targets_are_separate(machine: WindowsMachine) -> None:
    session = Session(machine, client=("127.0.0.1", 50000), server=("127.20.0.1", 22))
    assert session.environment["SSH_CONNECTION"] == "127.0.0.1 50000 127.20.0.1 22"
    session.set_environment_variable("HTTPS_PROXY", "http://p:1", "Machine")
    assert session.get_environment_variable("HTTPS_PROXY", "Machine") == "http://p:1"
    assert session.get_environment_variable("HTTPS_PROXY", "Process") is None  # a new logon sees it
    assert Session(machine).get_environment_variable("https_proxy", "Process") == "http://p:1"
    session.set_environment_variable("HTTPS_PROXY", None, "Machine")
    assert "HTTPS_PROXY" not in session.environment_variables("Machine")
    session.set_environment_variable("ONLY_HERE", "1", "Process")
    assert "ONLY_HERE" not in machine.machine_environment()


def test_files_resolve_against_the_location(machine: WindowsMachine) -> None:
    session = Session(machine)
    assert session.resolve_file_path("x.txt") == "C:\\Users\\Administrator\\x.txt"
    session.location = "HKLM:\\SOFTWARE"  # a registry location: .NET still resolves against the home
    assert session.resolve_file_path("x.txt") == "C:\\Users\\Administrator\\x.txt"
