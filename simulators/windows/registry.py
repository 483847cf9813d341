"""The part of the Windows registry that proxy configuration touches.

Keys are addressed case-insensitively and keep the case they were created with. Only the keys
a Windows worker node's proxy setup reads or writes exist; anything else is "not found", as
on a machine where the key was never created.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

MACHINE_ENVIRONMENT = r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
USER_ENVIRONMENT = r"HKEY_CURRENT_USER\Environment"
SERVICES = r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Services"
# Win32-OpenSSH reads DefaultShell here for every session; absent, sessions run cmd.exe.
OPENSSH = r"HKEY_LOCAL_MACHINE\SOFTWARE\OpenSSH"

_HIVES = {
    "hklm": "HKEY_LOCAL_MACHINE",
    "hkey_local_machine": "HKEY_LOCAL_MACHINE",
    "hkcu": "HKEY_CURRENT_USER",
    "hkey_current_user": "HKEY_CURRENT_USER",
}

# .NET / PowerShell names of registry value kinds.
VALUE_KINDS = ("String", "ExpandString", "MultiString", "DWord", "QWord", "Binary")


class RegistryError(LookupError):
    reason = "RegistryError"


@dataclass
class RegistryValue:
    name: str
    kind: str
    data: str | list[str] | int | bytes


@dataclass
class RegistryKey:
    path: str  # canonical, e.g. HKEY_LOCAL_MACHINE\SYSTEM\...
    values: dict[str, RegistryValue] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.rsplit("\\", 1)[-1]

    def get(self, name: str) -> RegistryValue | None:
        return self.values.get(name.lower())

    def set(self, name: str, data: str | list[str] | int | bytes, kind: str) -> None:
        existing = self.values.get(name.lower())
        self.values[name.lower()] = RegistryValue(existing.name if existing else name, kind, data)

    def delete(self, name: str) -> bool:
        return self.values.pop(name.lower(), None) is not None

    def value_names(self) -> list[str]:
        return [value.name for value in self.values.values()]


def canonical_key_path(path: str) -> str | None:
    """``HKLM:\\SYSTEM\\X`` or ``Registry::HKEY_LOCAL_MACHINE\\SYSTEM\\X`` to the canonical form.

    Returns None if the path does not name a supported hive.
    """
    text = path.replace("/", "\\")
    if "::" in text:
        provider, _, text = text.partition("::")
        if not provider.lower().endswith("registry"):
            return None
        hive, _, rest = text.partition("\\")
    else:
        drive, colon, rest = text.partition(":")
        if not colon:
            return None
        hive = drive
    canonical_hive = _HIVES.get(hive.lower())
    if canonical_hive is None:
        return None
    parts = [part for part in rest.split("\\") if part not in ("", ".")]
    resolved: list[str] = []
    for part in parts:
        if part == "..":
            if resolved:
                resolved.pop()
        else:
            resolved.append(part)
    return "\\".join([canonical_hive, *resolved])


def drive_path(canonical: str) -> str:
    """The PowerShell drive form of a canonical key path (``HKLM:\\SYSTEM\\...``)."""
    hive, _, rest = canonical.partition("\\")
    drive = "HKLM:" if hive == "HKEY_LOCAL_MACHINE" else "HKCU:"
    return f"{drive}\\{rest}"


@dataclass
class Registry:
    keys: dict[str, RegistryKey] = field(default_factory=dict)

    @classmethod
    def for_node(cls, services: Iterable[str], machine_environment: dict[str, str],
                 user_environment: dict[str, str]) -> Registry:
        registry = cls()
        for name in ("HKEY_LOCAL_MACHINE", "HKEY_CURRENT_USER",
                     r"HKEY_LOCAL_MACHINE\SYSTEM", r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet",
                     r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Control",
                     r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Control\Session Manager",
                     MACHINE_ENVIRONMENT, USER_ENVIRONMENT, SERVICES, r"HKEY_LOCAL_MACHINE\SOFTWARE", OPENSSH):
            registry.create_key(name)
        machine = registry.key(MACHINE_ENVIRONMENT)
        assert machine is not None
        for var, value in machine_environment.items():
            machine.set(var, value, "ExpandString" if "%" in value or var.lower() == "path" else "String")
        user = registry.key(USER_ENVIRONMENT)
        assert user is not None
        for var, value in user_environment.items():
            user.set(var, value, "ExpandString" if "%" in value else "String")
        for service in services:
            key = registry.create_key(f"{SERVICES}\\{service}")
            key.set("Start", 2, "DWord")
            key.set("Type", 16, "DWord")
            key.set("ObjectName", "LocalSystem", "String")
        return registry

    def create_key(self, canonical: str) -> RegistryKey:
        existing = self.keys.get(canonical.lower())
        if existing is not None:
            return existing
        key = RegistryKey(canonical)
        self.keys[canonical.lower()] = key
        return key

    def key(self, canonical: str) -> RegistryKey | None:
        return self.keys.get(canonical.lower())

    def subkeys(self, canonical: str) -> list[RegistryKey]:
        prefix = canonical.lower() + "\\"
        return sorted(
            (key for lowered, key in self.keys.items()
             if lowered.startswith(prefix) and "\\" not in lowered[len(prefix):]),
            key=lambda key: key.path.lower(),
        )

    def remove_key(self, canonical: str) -> None:
        lowered = canonical.lower()
        for name in [name for name in self.keys if name == lowered or name.startswith(lowered + "\\")]:
            del self.keys[name]

    def environment(self, canonical: str) -> dict[str, str]:
        """The string values of an environment key (name -> value), case preserved."""
        key = self.key(canonical)
        if key is None:
            return {}
        return {value.name: str(value.data) for value in key.values.values()
                if isinstance(value.data, str)}

    def service_environment(self, service: str) -> list[str]:
        """The ``Environment`` REG_MULTI_SZ of a service key, as ``NAME=value`` strings."""
        key = self.key(f"{SERVICES}\\{service}")
        value = key.get("Environment") if key else None
        if value is None:
            return []
        if isinstance(value.data, list):
            return [str(item) for item in value.data]
        return [str(value.data)]
