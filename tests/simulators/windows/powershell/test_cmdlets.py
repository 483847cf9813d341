"""Cmdlets against a machine's plain state (no SSH)."""

from __future__ import annotations

import hashlib
import json

import pytest
import trustme

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT
from proxyfleet.simulators.windows.session import Session
from tests.support import ps

ENV_KEY = r"HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"


async def test_machine_environment_through_dotnet_and_registry(machine: WindowsMachine) -> None:
    await ps(machine, "[Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://proxy:3128', 'Machine')")
    key = machine.registry.key(MACHINE_ENVIRONMENT)
    assert key is not None and key.get("HTTP_PROXY").data == "http://proxy:3128"  # type: ignore[union-attr]
    read = await ps(machine, f"(Get-ItemProperty -Path '{ENV_KEY}' -Name HTTP_PROXY).HTTP_PROXY;"
                             f"Get-ItemPropertyValue '{ENV_KEY}' -Name http_proxy")
    assert read.stdout.split() == ["http://proxy:3128", "http://proxy:3128"]
    await ps(machine, "[System.Environment]::SetEnvironmentVariable('HTTP_PROXY', $null, "
                      "[EnvironmentVariableTarget]::Machine)")
    assert key.get("HTTP_PROXY") is None


async def test_empty_string_deletes_like_dotnet(machine: WindowsMachine) -> None:
    await ps(machine, "[Environment]::SetEnvironmentVariable('NO_PROXY', 'a,b', 'Machine')")
    await ps(machine, "[Environment]::SetEnvironmentVariable('NO_PROXY', '', 'Machine')")
    assert "NO_PROXY" not in machine.machine_environment()


async def test_machine_scope_does_not_change_the_running_session(machine: WindowsMachine) -> None:
    session = Session(machine)
    result = await ps(machine, "[Environment]::SetEnvironmentVariable('HTTPS_PROXY', 'http://p:1', 'Machine');"
                               "\"[$env:HTTPS_PROXY]\"", session)
    assert result.stdout.strip() == "[]"
    fresh = await ps(machine, "$env:HTTPS_PROXY")
    assert fresh.stdout.strip() == "http://p:1"


async def test_set_item_property_and_remove_item_property(machine: WindowsMachine) -> None:
    await ps(machine, f"Set-ItemProperty -Path '{ENV_KEY}' -Name NO_PROXY -Value '.svc,10.0.0.0/16'")
    assert machine.machine_environment()["NO_PROXY"] == ".svc,10.0.0.0/16"
    await ps(machine, f"Remove-ItemProperty -Path '{ENV_KEY}' -Name NO_PROXY")
    assert "NO_PROXY" not in machine.machine_environment()
    missing = await ps(machine, f"Remove-ItemProperty -Path '{ENV_KEY}' -Name NO_PROXY")
    assert "Property NO_PROXY does not exist at path HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet" \
        "\\Control\\Session Manager\\Environment." in missing.stderr
    nokey = await ps(machine, "Get-ItemProperty HKLM:\\SOFTWARE\\Nope")
    assert "Cannot find path 'HKLM:\\SOFTWARE\\Nope' because it does not exist." in nokey.stderr


async def test_service_environment_multistring(machine: WindowsMachine) -> None:
    script = ("New-ItemProperty -Path HKLM:\\SYSTEM\\CurrentControlSet\\Services\\containerd "
              "-Name Environment -PropertyType MultiString -Value @('HTTP_PROXY=http://svc:1', 'X=y') -Force")
    assert (await ps(machine, script)).exit_code == 0
    assert machine.registry.service_environment("containerd") == ["HTTP_PROXY=http://svc:1", "X=y"]


@pytest.mark.parametrize("value", [
    "it's", 'say "hi"', "$(Remove-Item C:\\k -Recurse)", "a;b", "tick`n", "\u2019curly\u2018", "100%",
])
async def test_values_quoted_correctly_are_stored_verbatim(machine: WindowsMachine, value: str) -> None:
    quoted = "'" + "".join(c + c if c in "'\u2018\u2019\u201a\u201b" else c for c in value) + "'"
    result = await ps(machine, f"[Environment]::SetEnvironmentVariable('HTTP_PROXY', {quoted}, 'Machine')")
    assert result.exit_code == 0, result.stderr
    assert machine.machine_environment()["HTTP_PROXY"] == value
    assert machine.filesystem.exists("C:\\k")  # nothing was executed


def _ca_pem(ca: trustme.CA) -> bytes:
    return ca.cert_pem.bytes()


async def test_import_certificate_pem_and_der_then_remove(machine: WindowsMachine) -> None:
    ca = trustme.CA()
    pem = _ca_pem(ca)
    import ssl

    der = ssl.PEM_cert_to_DER_cert(pem.decode())
    thumbprint = hashlib.sha1(der).hexdigest().upper()
    machine.filesystem.write_bytes("C:\\k\\ca.pem", pem)
    machine.filesystem.write_bytes("C:\\k\\ca.cer", der)
    result = await ps(machine, "Import-Certificate -FilePath C:\\k\\ca.pem -CertStoreLocation "
                               "Cert:\\LocalMachine\\Root | Select-Object -ExpandProperty Thumbprint")
    assert result.stdout.strip() == thumbprint
    assert machine.stores.machine_root.get(thumbprint) is not None
    again = await ps(machine, "(Import-Certificate C:\\k\\ca.cer -CertStoreLocation Cert:\\LocalMachine\\Root).Thumbprint")
    assert again.stdout.strip() == thumbprint
    assert len(machine.stores.machine_root.certificates) == 1  # one copy, as Windows keeps
    listed = await ps(machine, "Get-ChildItem Cert:\\LocalMachine\\Root | ForEach-Object Thumbprint")
    assert listed.stdout.split() == [thumbprint]
    assert (await ps(machine, f"Test-Path Cert:\\LocalMachine\\Root\\{thumbprint}")).stdout.strip() == "True"
    await ps(machine, f"Remove-Item Cert:\\LocalMachine\\Root\\{thumbprint}")
    assert machine.stores.machine_root.get(thumbprint) is None


async def test_import_certificate_reads_only_the_first_certificate_of_a_bundle(machine: WindowsMachine) -> None:
    first, second = trustme.CA(), trustme.CA()
    machine.filesystem.write_bytes("C:\\k\\bundle.crt", _ca_pem(first) + _ca_pem(second))
    await ps(machine, "Import-Certificate -FilePath C:\\k\\bundle.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert len(machine.stores.machine_root.certificates) == 1


async def test_import_certificate_of_garbage_fails_like_windows(machine: WindowsMachine) -> None:
    machine.filesystem.write_bytes("C:\\k\\junk.crt", b"not a certificate at all")
    result = await ps(machine, "Import-Certificate -FilePath C:\\k\\junk.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert result.exit_code == 1
    assert "Cannot find the requested object. 0x80092009 (-2146885623 CRYPT_E_NOT_FOUND)" in result.stderr
    missing = await ps(machine, "Import-Certificate -FilePath C:\\k\\none.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert "The system cannot find the file specified." in missing.stderr
    assert machine.stores.machine_root.certificates == {}


async def test_certificate_pipeline_removal(machine: WindowsMachine) -> None:
    for index in range(3):
        machine.filesystem.write_bytes(f"C:\\k\\c{index}.pem", _ca_pem(trustme.CA(organization_name=f"org{index}")))
        await ps(machine, f"Import-Certificate C:\\k\\c{index}.pem -CertStoreLocation Cert:\\LocalMachine\\Root")
    await ps(machine, "Get-ChildItem Cert:\\LocalMachine\\Root | Where-Object { $_.Subject -like '*org1*' } | Remove-Item")
    subjects = [c.subject for c in machine.stores.machine_root.certificates.values()]
    assert len(subjects) == 2 and not any("org1" in s for s in subjects)


async def test_files_content_and_hash(machine: WindowsMachine) -> None:
    await ps(machine, "Set-Content -Path C:\\k\\a.txt -Value 'one','two'")
    assert machine.filesystem.read_bytes("C:\\k\\a.txt") == b"one\r\ntwo\r\n"
    lines = await ps(machine, "(Get-Content C:\\k\\a.txt).Count; Get-Content C:\\k\\A.TXT -Raw")
    assert lines.stdout.replace("\r\n", "\n").startswith("2\none\ntwo\n")
    digest = hashlib.sha256(b"one\r\ntwo\r\n").hexdigest().upper()
    hashed = await ps(machine, "(Get-FileHash C:\\k\\a.txt).Hash")
    assert hashed.stdout.strip() == digest
    await ps(machine, "Set-Content C:\\k\\u.txt -Value 'é' -Encoding UTF8")
    assert machine.filesystem.read_bytes("C:\\k\\u.txt") == b"\xef\xbb\xbf\xc3\xa9\r\n"  # 5.1 writes a BOM
    assert (await ps(machine, "Test-Path C:\\k\\a.txt -PathType Leaf")).stdout.strip() == "True"
    await ps(machine, "Remove-Item C:\\k\\a.txt")
    assert not machine.filesystem.exists("C:\\k\\a.txt")
    gone = await ps(machine, "Get-Content C:\\k\\a.txt")
    assert "Cannot find path 'C:\\k\\a.txt' because it does not exist." in gone.stderr


async def test_paths_cannot_leave_the_drive(machine: WindowsMachine) -> None:
    await ps(machine, "Set-Content -Path C:\\..\\..\\..\\escape.txt -Value x")
    assert (machine.filesystem.root / "escape.txt").exists()
    assert not (machine.filesystem.root.parent / "escape.txt").exists()
    other = await ps(machine, "Get-ChildItem D:\\")
    assert "Cannot find drive. A drive with the name 'D' does not exist." in other.stderr


async def test_environment_drive(machine: WindowsMachine) -> None:
    result = await ps(machine, "$env:FOO = 'bar'; (Get-Item Env:FOO).Value; Test-Path Env:\\FOO;"
                               "Remove-Item Env:FOO; Test-Path Env:FOO")
    assert result.stdout.split() == ["bar", "True", "False"]


async def test_services_and_dependencies(machine: WindowsMachine) -> None:
    refused = await ps(machine, "Stop-Service containerd")
    assert "Cannot stop service 'containerd container runtime (containerd)' because it has dependent " \
           "services. It can only be stopped if the Force flag is set." in refused.stderr
    assert machine.services["containerd"].status == "Running"
    await ps(machine, "Stop-Service containerd -Force")
    assert machine.services["kubelet"].status == "Stopped"
    await ps(machine, "Start-Service kubelet")
    assert machine.services["containerd"].status == "Running"  # dependencies start first
    before = machine.services["kube-proxy"].start_count
    await ps(machine, "Restart-Service kubelet -Force")
    assert machine.services["kube-proxy"].start_count == before  # was stopped: stays stopped
    missing = await ps(machine, "Get-Service nosuch")
    assert "Cannot find any service with service name 'nosuch'." in missing.stderr
    as_json = json.loads((await ps(machine, "Get-Service kubelet | Select-Object Name,Status,StartType | ConvertTo-Json")).stdout)
    assert as_json == {"Name": "kubelet", "Status": 4, "StartType": 2}


async def test_restart_computer_asks_the_node(machine: WindowsMachine) -> None:
    session = Session(machine)
    assert (await ps(machine, "Restart-Computer -Force", session)).exit_code == 0
    assert session.reboot_requested
    local = await ps(machine, "Restart-Computer -Wait")
    assert "Cannot wait for the local computer to restart." in local.stderr


async def test_boot_time_and_processes(machine: WindowsMachine) -> None:
    result = await ps(machine, "(Get-CimInstance Win32_OperatingSystem).LastBootUpTime.ToString('o')")
    assert result.stdout.strip().startswith(machine.boots[-1].booted_at.strftime("%Y-%m-%dT%H:%M:%S"))
    proc = await ps(machine, "(Get-Process -Name kubelet).Id")
    assert int(proc.stdout) == machine.services["kubelet"].process.pid  # type: ignore[union-attr]
    bad = await ps(machine, "Get-CimInstance Win32_Nope")
    assert "Invalid class" in bad.stderr


async def test_native_programs(machine: WindowsMachine) -> None:
    result = await ps(machine, "hostname; whoami; C:\\Windows\\System32\\hostname.exe")
    assert result.stdout.split() == ["WIN-TEST", "win-test\\administrator", "WIN-TEST"]
    cmd = await ps(machine, 'cmd.exe /c "set HTTP_PROXY=x&& echo %HTTP_PROXY% && nope"')
    assert cmd.stdout.split() == ["%HTTP_PROXY%"]  # cmd expands %VAR% when it reads the line, before set runs
    assert "'nope' is not recognized as an internal or external command," in cmd.stderr
    child = await ps(machine, "$env:CHILD = 'inherited'; powershell.exe -NoProfile -NonInteractive "
                              "-ExecutionPolicy Bypass -Command 'Write-Output $env:CHILD; exit 3'; $LASTEXITCODE")
    assert child.stdout.split() == ["inherited", "3"]
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
