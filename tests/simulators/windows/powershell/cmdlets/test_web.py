"""Invoke-WebRequest's failures in .NET's words (its traffic through the lab is tested in
test_traffic): a name no resolver knows, a bad URI, and its errors as error records."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_an_unknown_name_cannot_be_resolved(machine: WindowsMachine) -> None:
    result = await ps(machine, "Invoke-WebRequest -Uri https://quay.io/ -UseBasicParsing")
    assert result.exit_code == 1
    assert result.stderr.startswith("Invoke-WebRequest : The remote name could not be resolved: 'quay.io'")
    assert "System.Net.HttpWebRequest" in result.stderr  # the category line names .NET's request


async def test_the_error_can_be_caught(machine: WindowsMachine) -> None:
    result = await ps(machine, "try { Invoke-WebRequest -Uri https://quay.io/ -UseBasicParsing -ErrorAction Stop } "
                               "catch { 'caught: ' + $_.Exception.Message }")
    assert result.stdout.strip() == "caught: The remote name could not be resolved: 'quay.io'"
