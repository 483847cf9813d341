"""Object cmdlets: ConvertTo-Json with Windows PowerShell 5's escapes, ConvertFrom-Json, the pipeline cmdlets."""

from __future__ import annotations

import json

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_convert_to_json_uses_windows_powershell_5_escapes(machine: WindowsMachine) -> None:
    result = await ps(machine, "@{ 'q' = \"it's <a&b>\" } | ConvertTo-Json -Compress")
    assert result.stdout.strip() == '{"q":"it\\u0027s \\u003ca\\u0026b\\u003e"}'
    assert json.loads(result.stdout) == {"q": "it's <a&b>"}
    pretty = await ps(machine, "[ordered]@{ a = 1; b = @(1, 2) } | ConvertTo-Json")
    assert '"a":  1' in pretty.stdout
    assert json.loads(pretty.stdout) == {"a": 1, "b": [1, 2]}


async def test_convert_from_json_makes_objects(machine: WindowsMachine) -> None:
    result = await ps(machine, "$o = '{\"a\": {\"b\": [1, 2]}}' | ConvertFrom-Json; $o.a.b[1]")
    assert result.stdout.strip() == "2"
    bad = await ps(machine, "'{nope' | ConvertFrom-Json")
    assert "Invalid JSON primitive" in bad.stderr


async def test_pipeline_cmdlets(machine: WindowsMachine) -> None:
    script = ("Get-Service | Where-Object { $_.Name -like 'k*' } | Sort-Object Name -Descending | "
              "ForEach-Object { $_.Name } ")
    assert (await ps(machine, script)).stdout.split() == ["kubelet", "kube-proxy"]
    simplified = await ps(machine, "Get-Service | Where-Object Name -EQ 'sshd' | Select-Object -ExpandProperty DisplayName")
    assert simplified.stdout.strip() == "OpenSSH SSH Server"
    member = await ps(machine, "Get-Service containerd, sshd | ForEach-Object Name")
    assert member.stdout.split() == ["containerd", "sshd"]
    selected = await ps(machine, "Get-Service kubelet | Select-Object Name, Status | ConvertTo-Json -Compress")
    assert json.loads(selected.stdout) == {"Name": "kubelet", "Status": 4}
