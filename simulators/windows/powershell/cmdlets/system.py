"""Services, processes, restart and a few host cmdlets."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from typing import Any

from proxyfleet.core.cancelling import wait_until
from proxyfleet.simulators.windows.machine import ProcessRecord, Service, ServiceError, WindowsMachine
from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.dotnet import DotNetError, _datetime_to_string
from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord
from proxyfleet.simulators.windows.powershell.values import EnumValue, PSObject, to_string, wildcard_regex

_NS = "Microsoft.PowerShell.Commands."
_STATUS = {"Stopped": 1, "StartPending": 2, "StopPending": 3, "Running": 4}
_START = {"Boot": 0, "System": 1, "Automatic": 2, "Manual": 3, "Disabled": 4}
MAX_SLEEP_SECONDS = 300


# ServiceControllerStatus, every enumerator (the simulated services are only ever Stopped or Running).
_STATUS_NAMES = ("Stopped", "StartPending", "StopPending", "Running", "ContinuePending", "PausePending", "Paused")
_TIMESPAN = re.compile(r"\s*(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?\s*")
_TIMESPAN_DAYS = re.compile(r"\s*(-)?(\d+)\s*")
_TIMED_OUT = "Time out has expired and the operation has not been completed."


def _argument_error(argument: str, value: Any, type_name: str, reason: str) -> CommandFailure:
    return CommandFailure(ErrorRecord(
        message=f'Cannot convert argument "{argument}", with value: "{to_string(value)}", for "WaitForStatus" '
                f'to type "{type_name}": "{reason}"', error_id="MethodArgumentConversionInvalidCastArgument",
        category="NotSpecified", exception="MethodException"))


def _desired_status(value: Any) -> str:
    """``desiredStatus`` as .NET converts it: an enum value, its name in any case, or its number."""
    type_name = "System.ServiceProcess.ServiceControllerStatus"
    if isinstance(value, EnumValue):
        value = value.name
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(_STATUS_NAMES):
        return _STATUS_NAMES[value - 1]
    text = to_string(value)
    for name in _STATUS_NAMES:
        if text.strip().lower() == name.lower():
            return name
    raise _argument_error("desiredStatus", value, type_name,
                          f'Cannot convert value "{text}" to type "{type_name}". Error: "Unable to match the '
                          f"identifier name {text} to a valid enumerator name. Specify one of the following "
                          f'enumerator names and try again:\r\n{", ".join(_STATUS_NAMES)}"')


def _timespan_seconds(value: Any) -> float:
    """``timeout`` as PowerShell converts it to a TimeSpan: ``[d.]hh:mm[:ss[.fffffff]]`` or a
    whole number of days as text, a number as ticks (100 ns)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 10**7
    text = to_string(value)
    if (days_only := _TIMESPAN_DAYS.fullmatch(text)) is not None:
        sign, days = days_only.groups()
        return (-1 if sign else 1) * int(days) * 86400.0
    match = _TIMESPAN.fullmatch(text)
    if match is None or int(match[3]) > 23 or int(match[4]) > 59 or int(match[5] or 0) > 59:
        raise _argument_error("timeout", value, "System.TimeSpan",
                              f'Cannot convert value "{text}" to type "System.TimeSpan". Error: "String was '
                              'not recognized as a valid TimeSpan."')
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = (int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds or 0)
             + int((fraction or "0").ljust(7, "0")) / 10**7)
    return -total if sign else total


async def _wait_for_status(machine: WindowsMachine, service: Service, controller: PSObject,
                           desired: str, within: float | None) -> None:
    """``ServiceController.WaitForStatus``: return once the service has ``desired`` status, else
    .NET's TimeoutException once ``within`` seconds (its ``timeout``) have passed. The real method
    refreshes every 250 ms; here the machine's service events wake it (no polling); a wait never outlasts
    ``MAX_SLEEP_SECONDS`` (Start-Sleep's bound: one loop serves the whole fleet's sessions)."""
    if within is not None and within < 0:
        raise DotNetError("Specified argument was out of the range of valid values.\r\nParameter name: timeout",
                          "ArgumentOutOfRangeException")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(MAX_SLEEP_SECONDS, MAX_SLEEP_SECONDS if within is None else within)
    changed = asyncio.Event()

    def listener(kind: str, data: dict[str, Any]) -> None:
        changed.set()

    machine.listeners.append(listener)
    try:
        while service.status != desired:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise DotNetError(_TIMED_OUT, "TimeoutException")
            changed.clear()
            await wait_until(changed, remaining)
    finally:
        machine.listeners.remove(listener)
    # WaitForStatus refreshes the controller: its Status is the one it waited for.
    controller.set("Status", EnumValue("System.ServiceProcess.ServiceControllerStatus", desired,
                                       _STATUS_NAMES.index(desired) + 1))


def service_object(ctx: CommandContext, service: Service) -> PSObject:
    machine = ctx.session.machine
    controller = _service_snapshot(ctx, service)

    async def wait_for_status(desired_status: Any, timeout: Any = None) -> None:  # noqa: ASYNC109 (.NET's name)
        desired = _desired_status(desired_status)
        await _wait_for_status(machine, service, controller, desired,
                               None if timeout is None else _timespan_seconds(timeout))

    controller.methods["waitforstatus"] = wait_for_status
    return controller


def _service_snapshot(ctx: CommandContext, service: Service) -> PSObject:
    machine = ctx.session.machine
    return PSObject(["System.ServiceProcess.ServiceController"], {
        "Name": service.name,
        "DisplayName": service.definition.display_name,
        "Status": EnumValue("System.ServiceProcess.ServiceControllerStatus", service.status,
                            _STATUS[service.status]),
        "StartType": EnumValue("System.ServiceProcess.ServiceStartMode", service.start_type,
                               _START[service.start_type]),
        "ServiceName": service.name,
        "CanStop": service.status == "Running",
        "ServiceType": EnumValue("System.ServiceProcess.ServiceType", "Win32OwnProcess", 16),
        "MachineName": ".",
        "DependentServices": [d.name for d in machine.dependents(service.name)],
        "ServicesDependedOn": list(service.definition.depends_on),
    }, string_form="System.ServiceProcess.ServiceController")


def _services(ctx: CommandContext, args: dict[str, Any]) -> list[Service]:
    """The services named by -Name (wildcards allowed) or piped as -InputObject."""
    machine = ctx.session.machine
    wanted: list[str] = []
    source = args.get("InputObject")
    if isinstance(source, PSObject):
        wanted.append(to_string(source.get("Name")))
    elif source is not None:
        wanted.append(to_string(source))
    wanted.extend(args.get("Name") or [])
    if not wanted and ctx.spec.name == "Get-Service":
        return sorted(machine.services.values(), key=lambda s: s.name.lower())
    found: list[Service] = []
    for name in wanted:
        pattern = wildcard_regex(name)
        matches = sorted((s for s in machine.services.values() if pattern.match(s.name)),
                         key=lambda s: s.name.lower())
        if not matches and not any(c in name for c in "*?["):
            ctx.error(f"Cannot find any service with service name '{name}'.",
                      "NoServiceFoundForGivenName", "ObjectNotFound", "ServiceCommandException",
                      name)
        found.extend(matches)
    return found


async def get_service(ctx: CommandContext, args: dict[str, Any]) -> None:
    ctx.session.services_seen()
    for service in _services(ctx, args):
        ctx.write(service_object(ctx, service))


def _control(ctx: CommandContext, args: dict[str, Any], action: str) -> None:
    machine = ctx.session.machine
    for service in _services(ctx, args):
        try:
            if action == "start":
                machine.start_service(service.name)
            elif action == "stop":
                machine.stop_service(service.name, force=bool(args.get("Force")))
            else:
                machine.restart_service(service.name, force=bool(args.get("Force")))
        except ServiceError as exc:
            ctx.error(str(exc), exc.error_id, "InvalidOperation", "ServiceCommandException",
                      service.name, "ServiceController")
            continue
        if args.get("PassThru"):
            ctx.write(service_object(ctx, service))


async def start_service(ctx: CommandContext, args: dict[str, Any]) -> None:
    _control(ctx, args, "start")


async def stop_service(ctx: CommandContext, args: dict[str, Any]) -> None:
    _control(ctx, args, "stop")


async def restart_service(ctx: CommandContext, args: dict[str, Any]) -> None:
    _control(ctx, args, "restart")


async def restart_computer(ctx: CommandContext, args: dict[str, Any]) -> None:
    session = ctx.session
    hostname = session.machine.settings.hostname
    for name in args.get("ComputerName") or []:
        if name.lower() not in (".", "localhost", hostname.lower()):
            ctx.fail(f"The simulated node cannot restart the remote computer '{name}'.",
                     "RemoteRestartNotSupported", "NotImplemented", "NotSupportedException", name)
    if args.get("Wait"):
        ctx.fail("Cannot wait for the local computer to restart. The local computer is ignored "
                 "when the Wait parameter is specified.", "CannotWaitLocalComputer",
                 "InvalidOperation", "InvalidOperationException", hostname)
    others = session.runtime.active_sessions() - 1 if session.runtime else 0
    if others > 0 and not args.get("Force"):
        ctx.error(f"Failed to restart the computer {hostname} with the following error message: "
                  "The system shutdown cannot be initiated because there are other users logged "
                  "on to the computer.", "RestartcomputerFailed", "OperationStopped",
                  "InvalidOperationException", hostname)
        return
    session.request_reboot()


def process_object(record: ProcessRecord, path: str) -> PSObject:
    return PSObject(["System.Diagnostics.Process"], {
        "Id": record.pid, "ProcessName": record.name, "Name": record.name,
        "StartTime": record.started_at, "Path": path,
    }, string_form=f"System.Diagnostics.Process ({record.name})")


def _processes(ctx: CommandContext) -> list[tuple[str, int, Callable[[], PSObject]]]:
    """Every process as (name, id, its object when asked for), by name: a lookup by name builds
    only the objects it returns (the judge asks for three services on every look)."""
    machine = ctx.session.machine
    boot = machine.current_boot
    found: list[tuple[str, int, Callable[[], PSObject]]] = []
    if boot is not None:
        booted = boot.booted_at
        found.append(("System", 4, lambda: PSObject(["System.Diagnostics.Process"], {
            "Id": 4, "ProcessName": "System", "Name": "System", "StartTime": booted,
            "Path": None}, string_form="System.Diagnostics.Process (System)")))
    for service in machine.services.values():
        if service.process is not None:
            record, image = service.process, service.definition.image
            found.append((record.name, record.pid, functools.partial(process_object, record, image)))
    pid = ctx.session.pid
    found.append(("powershell", pid, lambda: PSObject(["System.Diagnostics.Process"], {
        "Id": pid, "ProcessName": "powershell", "Name": "powershell",
        "StartTime": None,
        "Path": r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"},
        string_form="System.Diagnostics.Process (powershell)")))
    return sorted(found, key=lambda entry: entry[0].lower())


async def get_process(ctx: CommandContext, args: dict[str, Any]) -> None:
    ctx.session.services_seen()  # the egress services' processes, their start times
    processes = _processes(ctx)
    if args.get("Id") is not None:
        for pid in args["Id"]:
            match = [make() for _, p, make in processes if p == int(pid)]
            if not match:
                ctx.error(f"Cannot find a process with the process identifier {pid}.",
                          "NoProcessFoundForGivenId", "ObjectNotFound", "ProcessCommandException",
                          str(pid), "Int32")
            for item in match:
                ctx.write(item)
        return
    names = args.get("Name")
    if not names:
        for _, _, make in processes:
            ctx.write(make())
        return
    for name in names:
        pattern = wildcard_regex(name)
        match = [make() for process_name, _, make in processes if pattern.match(process_name)]
        if not match and not any(c in name for c in "*?["):
            ctx.error(f'Cannot find a process with the name "{name}". Verify the process name '
                      "and call the cmdlet again.", "NoProcessFoundForGivenName", "ObjectNotFound",
                      "ProcessCommandException", name)
        for item in match:
            ctx.write(item)


async def get_cim_instance(ctx: CommandContext, args: dict[str, Any]) -> None:
    machine = ctx.session.machine
    name = args["ClassName"].lower()
    if name == "win32_operatingsystem":
        boot = machine.current_boot
        settings = machine.settings
        ctx.write(PSObject(["Microsoft.Management.Infrastructure.CimInstance#root/cimv2/"
                            "Win32_OperatingSystem"], {
            "CSName": settings.hostname.upper(), "Caption": settings.os_caption,
            "Version": settings.os_version, "BuildNumber": settings.os_version.rsplit(".", 1)[-1],
            "OSArchitecture": "64-bit", "SystemDirectory": r"C:\Windows\system32",
            "LastBootUpTime": boot.booted_at if boot else None,
            "LocalDateTime": machine.now(),
        }, display=("SystemDirectory", "BuildNumber", "Version", "LastBootUpTime")))
        return
    if name == "win32_service":
        ctx.session.services_seen()
        for service in sorted(machine.services.values(), key=lambda s: s.name.lower()):
            ctx.write(PSObject(["Microsoft.Management.Infrastructure.CimInstance#root/cimv2/"
                                "Win32_Service"], {
                "Name": service.name, "State": service.status,
                "ProcessId": service.process.pid if service.process else 0,
                "StartMode": "Auto" if service.start_type == "Automatic" else service.start_type,
                "PathName": service.definition.image,
            }, display=("ProcessId", "Name", "StartMode", "State")))
        return
    ctx.fail("Invalid class ", "HRESULT 0x80041010", "MetadataError", "CimException",
             args["ClassName"])


async def get_date(ctx: CommandContext, args: dict[str, Any]) -> None:
    now = ctx.session.machine.now()
    if args.get("Format"):
        try:
            ctx.write(_datetime_to_string(now, args["Format"]))
        except DotNetError as exc:
            ctx.fail(str(exc), "FormatNotSupported", "InvalidArgument", "FormatException")
        return
    ctx.write(now)


async def start_sleep(ctx: CommandContext, args: dict[str, Any]) -> None:
    seconds = float(args.get("Seconds") or 0) + float(args.get("Milliseconds") or 0) / 1000
    await asyncio.sleep(min(max(seconds, 0.0), MAX_SLEEP_SECONDS))


async def get_help(ctx: CommandContext, args: dict[str, Any]) -> None:
    name = args.get("Name")
    ctx.write("\nTOPIC\n    Windows PowerShell Help System (simulated node)\n\nSHORT DESCRIPTION\n"
              "    This node understands the PowerShell subset described in SUBSET.md.\n"
              + (f"\n    Get-Help {name}: no detailed help is installed on this node.\n"
                 if name else ""))


CMDLETS = (
    CmdletSpec("Get-Service", _NS + "GetServiceCommand", get_service, (
        Param("Name", "string[]", position=0, by_value=True, by_property=True,
              aliases=("ServiceName",)),
        Param("InputObject", "object", by_value=False), Param("DisplayName", "string[]"),
        Param("DependentServices", "switch"), Param("RequiredServices", "switch"))),
    *(CmdletSpec(name, _NS + name.replace("-", "") + "Command", handler, (
        Param("InputObject", "object", by_value=True),
        Param("Name", "string[]", position=0, by_property=True, aliases=("ServiceName",)),
        Param("Force", "switch"), Param("PassThru", "switch"), Param("NoWait", "switch"),
        Param("DisplayName", "string[]")), should_process=True)
      for name, handler in (("Start-Service", start_service), ("Stop-Service", stop_service),
                            ("Restart-Service", restart_service))),
    CmdletSpec("Restart-Computer", _NS + "RestartComputerCommand", restart_computer, (
        Param("ComputerName", "string[]", position=0, aliases=("CN", "__SERVER", "Server", "IPAddress")),
        Param("Force", "switch", aliases=("f",)), Param("Wait", "switch"), Param("Timeout", "int"),
        Param("Delay", "int"), Param("For", "string")), should_process=True),
    CmdletSpec("Get-Process", _NS + "GetProcessCommand", get_process, (
        Param("Name", "string[]", position=0, by_property=True, aliases=("ProcessName",)),
        Param("Id", "string[]", aliases=("PID",)))),
    CmdletSpec("Get-CimInstance",
               "Microsoft.Management.Infrastructure.CimCmdlets.GetCimInstanceCommand",
               get_cim_instance, (
                   Param("ClassName", "string", position=0, mandatory=True, aliases=("Class",)),
                   Param("Namespace", "string"), Param("Filter", "string"))),
    CmdletSpec("Get-Date", _NS + "GetDateCommand", get_date, (Param("Format", "string"),)),
    CmdletSpec("Start-Sleep", _NS + "StartSleepCommand", start_sleep, (
        Param("Seconds", "int", position=0, aliases=("s",)), Param("Milliseconds", "int",
                                                                    aliases=("ms",)))),
    CmdletSpec("Get-Help", _NS + "GetHelpCommand", get_help, (
        Param("Name", "string", position=0), Param("Full", "switch"), Param("Examples", "switch"))),
)
