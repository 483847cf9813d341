"""Services, processes, boot time and Restart-Computer."""

from __future__ import annotations

import json

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.session import Session
from tests.support import ps


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
