"""Item and item-property cmdlets on the registry and the file system: values, kinds, multi-strings."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.simulators.windows.powershell.scripts import ENV_KEY
from tests.support import ps


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
