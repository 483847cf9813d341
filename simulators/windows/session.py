"""One logon session on a simulated node: its process environment, location and the node
services it may ask for (reboot, egress)."""

from __future__ import annotations

from typing import Protocol

from proxyfleet.simulators.windows.environment import EnvironmentBlock
from proxyfleet.simulators.windows.filesystem import normalize
from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT, USER_ENVIRONMENT


class NodeRuntime(Protocol):
    """What a session may ask of the running node beyond its state."""

    def request_reboot(self) -> None:
        """Schedule a restart: sessions drop shortly after, the node boots again later."""

    def active_sessions(self) -> int:
        """Number of SSH sessions open on the node."""

    def services_seen(self) -> None:
        """A session other than the lab's own observation read the services' state."""


class Session:
    """A logon session: like ``powershell.exe`` started by sshd for one user."""

    def __init__(self, machine: WindowsMachine, username: str | None = None,
                 runtime: NodeRuntime | None = None,
                 client: tuple[str, int] | None = None, server: tuple[str, int] | None = None,
                 environment: EnvironmentBlock | None = None, observer: bool = False) -> None:
        """``environment``: the process's own (a child process inherits its parent's); None: a
        new logon's, built from the registry's machine and user variables. ``observer``: the
        lab's own observation logged on (the judge's key): what it reads releases nothing the node holds."""
        self.machine = machine
        self.observer = observer
        self.username = username or machine.settings.username
        self.runtime = runtime
        self.environment: EnvironmentBlock = (machine.session_environment(self.username) if environment is None
                                              else environment)
        if client and server:
            self.environment["SSH_CLIENT"] = f"{client[0]} {client[1]} {server[1]}"
            self.environment["SSH_CONNECTION"] = f"{client[0]} {client[1]} {server[0]} {server[1]}"
        self.location = rf"C:\Users\{self.username}"
        self.pid = machine.next_pid()
        self.reboot_requested = False

    @property
    def home(self) -> str:
        return rf"C:\Users\{self.username}"

    # --- environment by target, as [Environment]::Get/SetEnvironmentVariable see it ---------

    def _key(self, target: str) -> str:
        return MACHINE_ENVIRONMENT if target == "Machine" else USER_ENVIRONMENT

    def set_environment_variable(self, name: str, value: str | None, target: str) -> None:
        """Set or (value None) delete; Machine/User targets never touch this process."""
        if target == "Process":
            if value is None:
                self.environment.pop(name, None)
            else:
                self.environment[name] = value
            return
        key = self.machine.registry.key(self._key(target))
        assert key is not None
        if value is None:
            key.delete(name)
        else:
            # .NET writes REG_SZ here, even over a REG_EXPAND_SZ value.
            key.set(name, value, "String")

    def get_environment_variable(self, name: str, target: str) -> str | None:
        if target == "Process":
            return self.environment.get(name)
        key = self.machine.registry.key(self._key(target))
        value = key.get(name) if key else None
        return None if value is None else str(value.data)

    def environment_variables(self, target: str) -> dict[str, str]:
        if target == "Process":
            return self.environment.as_dict()
        return self.machine.registry.environment(self._key(target))

    # --- files as .NET sees them ------------------------------------------------------------

    def resolve_file_path(self, path: str) -> str:
        base = self.location if self.location[:2].upper() == "C:" else self.home
        return normalize(path, base)

    def read_file(self, path: str) -> bytes:
        """Raises OSError subclasses with .NET's message (FileNotFoundError, PermissionError)."""
        return self.machine.filesystem.read_bytes(path)

    def write_file(self, path: str, data: bytes) -> None:
        """Raises FileNotFoundError ("Could not find a part of the path") like .NET."""
        self.machine.filesystem.write_bytes(path, data)

    def services_seen(self) -> None:
        """Get-Service, Get-Process or Win32_Service read the services' state (see
        ``WindowsNode.services_seen``)."""
        if self.runtime is not None and not self.observer:
            self.runtime.services_seen()

    def request_reboot(self) -> None:
        self.reboot_requested = True
        if self.runtime is not None:
            self.runtime.request_reboot()
