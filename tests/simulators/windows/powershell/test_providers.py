"""PowerShell drives: a path never leaves its drive, and Env: shows the session's variables."""

from __future__ import annotations

import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


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


async def test_each_listing_of_a_store_hands_out_objects_of_its_own(machine: WindowsMachine, public_ca: trustme.CA) -> None:
    """Certificate objects are copies of one built per certificate: a script that changes one
    changes neither the next listing's nor another store's."""
    certificate = Certificate.from_pem(public_ca.cert_pem.bytes())
    machine.stores.machine_root.add(certificate)
    changed = await ps(machine, "$c = Get-ChildItem Cert:\\LocalMachine\\Root\\" + certificate.thumbprint + "\n"
                                "$c.FriendlyName = 'mine'; $c.FriendlyName")
    assert changed.stdout.strip() == "mine"
    again = await ps(machine, "(Get-ChildItem Cert:\\LocalMachine\\Root | Where-Object { $_.Thumbprint -eq '"
                              + certificate.thumbprint + "' }).PSPath; "
                              "@(Get-ChildItem Cert:\\LocalMachine\\Root | Where-Object { $_.FriendlyName -eq 'mine' }).Count")
    path, count = again.stdout.strip().splitlines()
    assert path == "Microsoft.PowerShell.Security\\Certificate::LocalMachine\\Root\\" + certificate.thumbprint
    assert count == "0"
