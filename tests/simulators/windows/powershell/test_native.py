"""Native programs a Windows node runs (outside PowerShell): their output and exit codes."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_native_programs(machine: WindowsMachine) -> None:
    result = await ps(machine, "hostname; whoami; C:\\Windows\\System32\\hostname.exe")
    assert result.stdout.split() == ["WIN-TEST", "win-test\\administrator", "WIN-TEST"]
    cmd = await ps(machine, 'cmd.exe /c "set HTTP_PROXY=x&& echo %HTTP_PROXY% && nope"')
    assert cmd.stdout.split() == ["%HTTP_PROXY%"]  # cmd expands %VAR% when it reads the line, before set runs
    assert "'nope' is not recognized as an internal or external command," in cmd.stderr
    child = await ps(machine, "$env:CHILD = 'inherited'; powershell.exe -NoProfile -NonInteractive "
                              "-ExecutionPolicy Bypass -Command 'Write-Output $env:CHILD; exit 3'; $LASTEXITCODE")
    assert child.stdout.split() == ["inherited", "3"]
    # a child's environment is its parent's, not the registry's: a machine variable set since the
    # parent's logon reaches neither
    late = await ps(machine, "[Environment]::SetEnvironmentVariable('LATE', 'x', 'Machine'); "
                             "powershell.exe -NoProfile -Command 'Write-Output \"[$env:LATE]\"'")
    assert late.stdout.split() == ["[]"], late.stderr
    encoded = __import__("base64").b64encode("Write-Output 'from encoded'".encode("utf-16-le")).decode()
    assert (await ps(machine, f"powershell -NoProfile -EncodedCommand {encoded}")).stdout.strip() == "from encoded"
    # In Windows PowerShell 5.1 'curl' is an alias of Invoke-WebRequest; curl.exe is the program.
    from proxyfleet.simulators.windows.powershell.commands import default_commands

    assert default_commands().resolve("curl").name == "Invoke-WebRequest"  # type: ignore[union-attr]
    assert default_commands().resolve("curl.exe").name == "curl.exe"  # type: ignore[union-attr]
    usage = await ps(machine, "curl.exe --bogus https://x/")
    assert "curl: option --bogus: is unknown" in usage.stdout + usage.stderr
    no_network = await ps(machine, "curl.exe -sS https://quay.io/")
    assert "curl: (6) Could not resolve host: quay.io" in no_network.stderr
