"""Parameter binding in PowerShell's words."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_bad_parameter_uses_parameter_binding_wording(machine: WindowsMachine) -> None:
    result = await ps(machine, "Get-Service -Bogus")
    assert result.stderr.startswith(
        "Get-Service : A parameter cannot be found that matches parameter name 'Bogus'.")
    assert "NamedParameterNotFound,Microsoft.PowerShell.Commands.GetServiceCommand" in result.stderr
    ambiguous = await ps(machine, "Get-ChildItem -F x")
    assert "the parameter name 'F' is ambiguous. Possible matches include: -Filter -Force -File." \
        in ambiguous.stderr
    extra = await ps(machine, "Get-Date a b")
    assert "A positional parameter cannot be found that accepts argument 'a'." in extra.stderr
    choice = await ps(machine, "Get-Content C:\\x -Encoding Klingon")
    assert "does not belong to the set" in choice.stderr
