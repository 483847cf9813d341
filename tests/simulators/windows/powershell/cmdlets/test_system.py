"""Services, processes, boot time and Restart-Computer."""

from __future__ import annotations

import asyncio
import json

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.session import Session
from tests.support import ps, wait_until


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


async def test_wait_for_status_returns_once_the_service_starts(machine: WindowsMachine) -> None:
    await ps(machine, "Stop-Service kube-proxy -Force")
    listening = len(machine.listeners)
    waiting = asyncio.create_task(ps(machine, "$s = Get-Service kube-proxy\n$s.WaitForStatus('running', "
                                              "'0.00:00:30.0')\n\"$($s.Status)\""))
    await wait_until(lambda: len(machine.listeners) > listening, what="the wait to begin")
    assert not waiting.done()  # stopped: it waits, it does not return at once
    machine.start_service("kube-proxy")
    result = await waiting
    assert (result.exit_code, result.stdout.strip()) == (0, "Running")  # the object refreshed
    assert len(machine.listeners) == listening  # nothing left listening
    running = await ps(machine, "(Get-Service kubelet).WaitForStatus(4, '00:00:00'); 'done'")
    assert running.stdout.strip() == "done"  # already Running (by its number): no wait at all


async def test_wait_for_status_times_out_and_refuses_what_dotnet_refuses(machine: WindowsMachine) -> None:
    await ps(machine, "Stop-Service kube-proxy -Force")
    timed_out = await ps(machine, "(Get-Service kube-proxy).WaitForStatus('Running', '00:00:00.1')")
    assert ('Exception calling "WaitForStatus" with "2" argument(s): "Time out has expired and the operation '
            'has not been completed."') in timed_out.stderr
    caught = await ps(machine, "try { (Get-Service kube-proxy).WaitForStatus('Running', '00:00:00.1') } "
                               "catch { $_.FullyQualifiedErrorId }")
    assert caught.stdout.strip() == "TimeoutException"  # catchable, by .NET's exception
    bad_status = await ps(machine, "(Get-Service kubelet).WaitForStatus('Started')")
    assert 'Cannot convert argument "desiredStatus", with value: "Started"' in bad_status.stderr
    assert "Unable to match the identifier name Started to a valid enumerator name." in bad_status.stderr
    bad_timeout = await ps(machine, "(Get-Service kubelet).WaitForStatus('Running', '24:00:00')")
    assert "String was not recognized as a valid TimeSpan." in bad_timeout.stderr
    negative = await ps(machine, "(Get-Service kubelet).WaitForStatus('Running', '-00:00:01')")
    assert "Specified argument was out of the range of valid values." in negative.stderr
