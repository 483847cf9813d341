"""A Windows Server worker node's state as plain data, and the pure operations on it.

What is modelled (DESIGN.md §3):

* The machine environment lives in the registry; a session reads the current machine and user
  environment when it starts.
* Services inherit the Service Control Manager's environment, which the SCM reads once at
  boot. So by default (``restart_reads_current_environment=False``) a changed machine variable
  reaches a service only after a reboot; the other setting models builds where a service
  restart reads the current machine environment. A service's own ``Environment``
  REG_MULTI_SZ applies whenever it starts.
* A process's environment is fixed when it starts; it is recorded for the lab's verification
  (real Windows gives no way to read another process's environment; the lab reads it here).

What is not modelled: users other than the configured administrator, WinINet/WinHTTP proxy
settings, the service failure-recovery actions, time zones (the node runs on UTC).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxyfleet.simulators.boots import BootRecord, utc_now
from proxyfleet.simulators.egress.records import EgressLog
from proxyfleet.simulators.windows.certstores import CertStores
from proxyfleet.simulators.windows.environment import EnvironmentBlock, expand_references
from proxyfleet.simulators.windows.filesystem import WindowsFilesystem
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT, OPENSSH, USER_ENVIRONMENT, Registry

POWERSHELL_EXE = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"


@dataclass(frozen=True)
class ServiceDefinition:
    name: str
    display_name: str
    image: str
    depends_on: tuple[str, ...] = ()
    # When the SCM gets to it after boot: 0 first (sshd answers before anything else runs),
    # higher later; the last stage is "Automatic (Delayed Start)".
    stage: int = 1


SERVICE_DEFINITIONS = (
    ServiceDefinition("containerd", "containerd container runtime", r"C:\k\containerd\containerd.exe"),
    ServiceDefinition("kubelet", "kubelet", r"C:\k\kubelet.exe", ("containerd",), stage=2),
    ServiceDefinition("kube-proxy", "kube-proxy", r"C:\k\kube-proxy.exe", ("kubelet",), stage=3),
    ServiceDefinition("hybrid-overlay-node", "hybrid-overlay-node", r"C:\k\hybrid-overlay-node.exe",
                      ("kubelet",), stage=3),
    ServiceDefinition("windows_exporter", "windows_exporter", r"C:\k\windows_exporter.exe", stage=4),
    ServiceDefinition("windows-instance-config-daemon", "Windows Instance Config Daemon",
                      r"C:\k\windows-instance-config-daemon.exe", stage=2),
    ServiceDefinition("sshd", "OpenSSH SSH Server", r"C:\Windows\System32\OpenSSH\sshd.exe", stage=0),
)
LAST_STAGE = max(d.stage for d in SERVICE_DEFINITIONS)

DEFAULT_MACHINE_ENVIRONMENT = {
    "ComSpec": r"C:\Windows\system32\cmd.exe",
    "DriverData": r"C:\Windows\System32\Drivers\DriverData",
    "NUMBER_OF_PROCESSORS": "2",
    "OS": "Windows_NT",
    "Path": r"C:\Windows\system32;C:\Windows;C:\Windows\System32\Wbem;"
            r"C:\Windows\System32\WindowsPowerShell\v1.0\;C:\Windows\System32\OpenSSH\;C:\k",
    "PATHEXT": ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC",
    "PROCESSOR_ARCHITECTURE": "AMD64",
    "PROCESSOR_IDENTIFIER": "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel",
    "PROCESSOR_LEVEL": "6",
    "PROCESSOR_REVISION": "5507",
    "PSModulePath": r"%ProgramFiles%\WindowsPowerShell\Modules;"
                    r"C:\Windows\system32\WindowsPowerShell\v1.0\Modules",
    "TEMP": r"C:\Windows\TEMP",
    "TMP": r"C:\Windows\TEMP",
    "USERNAME": "SYSTEM",
    "windir": r"C:\Windows",
}
DEFAULT_USER_ENVIRONMENT = {
    "Path": r"%USERPROFILE%\AppData\Local\Microsoft\WindowsApps;",
    "TEMP": r"%USERPROFILE%\AppData\Local\Temp",
    "TMP": r"%USERPROFILE%\AppData\Local\Temp",
}


class ServiceError(RuntimeError):
    """A Service Control Manager refusal, in PowerShell's words."""

    reason = "ServiceError"

    def __init__(self, message: str, error_id: str) -> None:
        super().__init__(message)
        self.error_id = error_id


@dataclass
class ProcessRecord:
    """A started process: its environment is fixed at ``started_at``."""

    pid: int
    name: str
    service: str
    started_at: dt.datetime
    boot_id: str
    environment: dict[str, str]
    exited_at: dt.datetime | None = None


@dataclass
class Service:
    definition: ServiceDefinition
    start_type: str = "Automatic"
    status: str = "Stopped"
    process: ProcessRecord | None = None
    start_count: int = 0

    @property
    def name(self) -> str:
        return self.definition.name


@dataclass
class MachineSettings:
    hostname: str
    username: str = "Administrator"
    # False: services see the machine environment as it was at boot (KB 821761).
    restart_reads_current_environment: bool = False
    os_version: str = "10.0.20348"
    # OpenSSH's DefaultShell: "cmd" (Windows' own default: the value is absent) or "powershell".
    default_shell: str = "cmd"
    os_caption: str = "Microsoft Windows Server 2022 Datacenter"


MachineListener = Callable[[str, dict[str, Any]], None]


@dataclass
class WindowsMachine:
    """All state of one simulated node."""

    settings: MachineSettings
    filesystem: WindowsFilesystem
    clock: Callable[[], dt.datetime] = utc_now
    registry: Registry = field(init=False)
    stores: CertStores = field(default_factory=CertStores.standard)
    services: dict[str, Service] = field(init=False)
    boots: list[BootRecord] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    scm_environment: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # pulled image reference -> image id
    # Every request its clients made, as they saw it (lab evidence: a real node keeps no such
    # record; the judge reads a route from it, whatever proxy carried it).
    egress: EgressLog = field(default_factory=EgressLog)
    listeners: list[MachineListener] = field(default_factory=list)
    _pids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000, 4))

    def __post_init__(self) -> None:
        self.services = {d.name.lower(): Service(d) for d in SERVICE_DEFINITIONS}
        self.registry = Registry.for_node(
            [d.name for d in SERVICE_DEFINITIONS], DEFAULT_MACHINE_ENVIRONMENT,
            DEFAULT_USER_ENVIRONMENT)
        if self.settings.default_shell == "powershell":
            openssh = self.registry.key(OPENSSH)
            assert openssh is not None
            openssh.set("DefaultShell", POWERSHELL_EXE, "String")
        for directory in (r"C:\k", r"C:\k\containerd", r"C:\Windows\System32", r"C:\Windows\Temp",
                          rf"C:\Users\{self.settings.username}", r"C:\ProgramData", r"C:\var\log"):
            self.filesystem.mkdir(directory)

    @classmethod
    def create(cls, settings: MachineSettings, root: Path,
               clock: Callable[[], dt.datetime] = utc_now) -> WindowsMachine:
        return cls(settings=settings, filesystem=WindowsFilesystem(root), clock=clock)

    # --- time and boots -----------------------------------------------------------------

    def now(self) -> dt.datetime:
        return self.clock()

    @property
    def current_boot(self) -> BootRecord | None:
        if self.boots and self.boots[-1].shutdown_at is None:
            return self.boots[-1]
        return None

    @property
    def is_up(self) -> bool:
        return self.current_boot is not None

    def _emit(self, kind: str, **data: Any) -> None:
        for listener in list(self.listeners):
            listener(kind, data)

    def boot(self, up_to_stage: int = LAST_STAGE) -> BootRecord:
        """Power on: the SCM snapshots the machine environment and starts the automatic services
        of the first stages (``start_stage`` starts the later ones, as the running node's clock says)."""
        record = BootRecord.after(self.boots, self.now())
        self.boots.append(record)
        self.scm_environment = self.system_environment().as_dict()
        self._emit("boot", boot=record)
        for stage in range(up_to_stage + 1):
            self.start_stage(stage)
        return record

    def start_stage(self, stage: int) -> None:
        """Start the automatic services of one boot stage that are not running yet."""
        if not self.is_up:
            return
        for service in self.services.values():
            if (service.definition.stage == stage and service.start_type == "Automatic"
                    and service.status != "Running"):
                self.start_service(service.name)

    def shutdown(self) -> None:
        """Stop every service and mark the boot as ended."""
        for service in self.services.values():
            if service.status == "Running":
                self._stop(service)
        boot = self.current_boot
        if boot is not None:
            boot.shutdown_at = self.now()
            self._emit("shutdown", boot=boot)

    # --- environment -----------------------------------------------------------------------

    def machine_environment(self) -> dict[str, str]:
        """The registry's machine variables, as written (unexpanded)."""
        return self.registry.environment(MACHINE_ENVIRONMENT)

    def user_environment(self) -> dict[str, str]:
        return self.registry.environment(USER_ENVIRONMENT)

    def _volatile(self, profile: str, username: str) -> dict[str, str]:
        host = self.settings.hostname.upper()
        return {
            "ALLUSERSPROFILE": r"C:\ProgramData",
            "APPDATA": rf"{profile}\AppData\Roaming",
            "CommonProgramFiles": r"C:\Program Files\Common Files",
            "CommonProgramFiles(x86)": r"C:\Program Files (x86)\Common Files",
            "CommonProgramW6432": r"C:\Program Files\Common Files",
            "COMPUTERNAME": host,
            "LOCALAPPDATA": rf"{profile}\AppData\Local",
            "ProgramData": r"C:\ProgramData",
            "ProgramFiles": r"C:\Program Files",
            "ProgramFiles(x86)": r"C:\Program Files (x86)",
            "ProgramW6432": r"C:\Program Files",
            "PUBLIC": r"C:\Users\Public",
            "SystemDrive": "C:",
            "SystemRoot": r"C:\Windows",
            "USERDOMAIN": host,
            "USERNAME": username,
            "USERPROFILE": profile,
        }

    def system_environment(self) -> EnvironmentBlock:
        """The environment LocalSystem processes (the SCM) build from the current registry."""
        block = EnvironmentBlock(self._volatile(r"C:\Windows\system32\config\systemprofile",
                                                f"{self.settings.hostname.upper()}$"))
        for name, value in self.machine_environment().items():
            block[name] = value
        for name in list(block):
            block[name] = expand_references(block[name], block)
        return block

    def session_environment(self, username: str) -> EnvironmentBlock:
        """What a new logon session of ``username`` starts with: machine + user variables."""
        profile = rf"C:\Users\{username}"
        block = EnvironmentBlock(self._volatile(profile, username))
        block.update({"HOMEDRIVE": "C:", "HOMEPATH": rf"\Users\{username}",
                      "LOGONSERVER": rf"\\{self.settings.hostname.upper()}"})
        machine = self.machine_environment()
        for name, value in machine.items():
            if name.lower() != "username":
                block[name] = value
        for name, value in self.user_environment().items():
            if name.lower() == "path" and "Path" in block:
                block[name] = block["Path"].rstrip(";") + ";" + value
            else:
                block[name] = value
        for name in list(block):
            block[name] = expand_references(block[name], block)
        return block

    # --- services ---------------------------------------------------------------------------

    def service(self, name: str) -> Service | None:
        return self.services.get(name.lower())

    def dependents(self, name: str) -> list[Service]:
        return [s for s in self.services.values()
                if name.lower() in (d.lower() for d in s.definition.depends_on)]

    def _display(self, service: Service) -> str:
        return f"{service.definition.display_name} ({service.name})"

    def start_service(self, name: str) -> Service:
        service = self.services[name.lower()]
        if service.status == "Running":
            return service
        if service.start_type == "Disabled":
            raise ServiceError(
                f"Service '{self._display(service)}' cannot be started due to the following "
                f"error: Cannot start service {service.name} on computer '.'.",
                "CouldNotStartService")
        for dependency in service.definition.depends_on:
            self.start_service(dependency)
        base = (self.system_environment().as_dict()
                if self.settings.restart_reads_current_environment else self.scm_environment)
        environment = EnvironmentBlock(base)
        for entry in self.registry.service_environment(service.name):
            variable, sep, value = entry.partition("=")
            if sep and variable:
                environment[variable] = value
        boot = self.current_boot
        process = ProcessRecord(
            pid=next(self._pids),
            name=service.definition.image.rsplit("\\", 1)[-1].removesuffix(".exe"),
            service=service.name,
            started_at=self.now(),
            boot_id=boot.boot_id if boot else "",
            environment=environment.as_dict(),
        )
        service.status = "Running"
        service.process = process
        service.start_count += 1
        self.processes.append(process)
        self._emit("service-started", service=service, process=process)
        return service

    def _stop(self, service: Service) -> None:
        for dependent in self.dependents(service.name):
            if dependent.status == "Running":
                self._stop(dependent)
        if service.process is not None:
            service.process.exited_at = self.now()
        service.status = "Stopped"
        process, service.process = service.process, None
        self._emit("service-stopped", service=service, process=process)

    def stop_service(self, name: str, force: bool = False) -> list[Service]:
        """Stop a service (and, with ``force``, its running dependents); return what stopped."""
        service = self.services[name.lower()]
        running_dependents = [d for d in self.dependents(service.name) if d.status == "Running"]
        if running_dependents and not force:
            raise ServiceError(
                f"Cannot stop service '{self._display(service)}' because it has dependent "
                "services. It can only be stopped if the Force flag is set.",
                "ServiceHasDependentServices")
        stopped = [service] if service.status == "Running" else []
        stopped += self._running_tree(running_dependents)
        if service.status == "Running" or running_dependents:
            self._stop(service)
        return stopped

    def _running_tree(self, services: list[Service]) -> list[Service]:
        found: list[Service] = []
        for service in services:
            found.append(service)
            found += self._running_tree([d for d in self.dependents(service.name)
                                         if d.status == "Running"])
        return found

    def restart_service(self, name: str, force: bool = False) -> None:
        """Stop, then start the service and the dependents that were running."""
        stopped = self.stop_service(name, force)
        self.start_service(name)
        for service in stopped:
            self.start_service(service.name)

    def ssh_default_shell(self) -> str:
        """What sshd starts for an exec request now: "powershell" if DefaultShell names
        powershell.exe, otherwise "cmd" (read per session, as Win32-OpenSSH does)."""
        key = self.registry.key(OPENSSH)
        value = key.get("DefaultShell") if key is not None else None
        shell = str(value.data).strip('"').lower() if value is not None else ""
        return "powershell" if shell.endswith("powershell.exe") else "cmd"

    def next_pid(self) -> int:
        return next(self._pids)
