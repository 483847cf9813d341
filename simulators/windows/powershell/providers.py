"""PowerShell provider paths (``C:``, ``Cert:``, ``Env:``, ``HKLM:``/``HKCU:``) and the items
they show, built from the machine's plain state."""

from __future__ import annotations

import datetime as dt
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.windows.certstores import CertStore
from proxyfleet.simulators.windows.filesystem import DriveNotFound, WindowsPathError, normalize
from proxyfleet.simulators.windows.powershell.values import PSObject, wildcard_regex
from proxyfleet.simulators.windows.registry import RegistryKey, canonical_key_path, drive_path

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.session import Session

FILESYSTEM = "FileSystem"
REGISTRY = "Registry"
CERTIFICATE = "Certificate"
ENVIRONMENT = "Environment"

PROVIDER_PREFIX = {
    FILESYSTEM: "Microsoft.PowerShell.Core\\FileSystem::",
    REGISTRY: "Microsoft.PowerShell.Core\\Registry::",
    CERTIFICATE: "Microsoft.PowerShell.Security\\Certificate::",
    ENVIRONMENT: "Microsoft.PowerShell.Core\\Environment::",
}
_WILDCARD = set("*?[")


class PathProblem(Exception):
    """A path that cannot be used; carries PowerShell's message and error id."""

    def __init__(self, message: str, error_id: str, category: str, exception: str) -> None:
        super().__init__(message)
        self.error_id = error_id
        self.category = category
        self.exception = exception


def not_found(display: str) -> PathProblem:
    return PathProblem(f"Cannot find path '{display}' because it does not exist.",
                       "PathNotFound", "ObjectNotFound", "ItemNotFoundException")


@dataclass(frozen=True)
class ProviderPath:
    provider: str
    path: str  # C:\k\x | HKEY_LOCAL_MACHINE\... | LocalMachine\Root\TP | NAME ("" is the root)

    @property
    def display(self) -> str:
        if self.provider == FILESYSTEM:
            return self.path
        if self.provider == REGISTRY:
            return drive_path(self.path)
        if self.provider == CERTIFICATE:
            return "Cert:\\" + self.path
        return "Env:\\" + self.path

    @property
    def ps_path(self) -> str:
        return PROVIDER_PREFIX[self.provider] + self.path

    @property
    def has_wildcard(self) -> bool:
        leaf = self.path.rsplit("\\", 1)[-1]
        return any(char in _WILDCARD for char in leaf)


def location_path(session: Session) -> ProviderPath:
    return resolve(session, session.location, relative_to_home=True)


def resolve(session: Session, text: str, relative_to_home: bool = False) -> ProviderPath:
    """Turn what a user typed into a provider path (no existence check)."""
    raw = text.strip()
    lowered = raw.lower()
    for provider, prefix in PROVIDER_PREFIX.items():
        short = prefix.split("\\", 1)[1]
        for form in (prefix.lower(), short.lower()):
            if lowered.startswith(form):
                rest = raw[len(form):]
                return _within(session, provider, rest)
    if lowered.startswith("registry::"):
        return _within(session, REGISTRY, raw[len("registry::"):])
    if raw.startswith("~"):
        raw = session.home + raw[1:]
        lowered = raw.lower()
    drive, colon, rest = raw.partition(":")
    if colon and "\\" not in drive and "/" not in drive and drive:
        name = drive.lower()
        if name == "cert":
            return _within(session, CERTIFICATE, rest)
        if name == "env":
            return _within(session, ENVIRONMENT, rest)
        if name in ("hklm", "hkcu"):
            return _within(session, REGISTRY, raw)
        if len(drive) == 1:
            return _filesystem(raw, session.location)
        if name in ("variable", "function", "alias", "wsman"):
            raise PathProblem(f"The simulated node does not provide the '{drive}:' drive.",
                              "DriveNotFound", "ObjectNotFound", "DriveNotFoundException")
        raise PathProblem(f"Cannot find drive. A drive with the name '{drive}' does not exist.",
                          "DriveNotFound", "ObjectNotFound", "DriveNotFoundException")
    current = session.location
    if current.lower().startswith(("cert:", "env:", "hklm:", "hkcu:")) and not relative_to_home:
        base = resolve(session, current, relative_to_home=True)
        joined = base.display.rstrip("\\") + "\\" + raw
        return resolve(session, joined, relative_to_home=True)
    return _filesystem(raw, current if current[:2].upper() == "C:" else session.home)


def _filesystem(text: str, cwd: str) -> ProviderPath:
    try:
        return ProviderPath(FILESYSTEM, normalize(text, cwd))
    except DriveNotFound as exc:
        raise PathProblem(str(exc), "DriveNotFound", "ObjectNotFound",
                          "DriveNotFoundException") from None
    except WindowsPathError as exc:
        raise PathProblem(str(exc), "ItemExistsIllegalCharacters", "InvalidArgument",
                          "ArgumentException") from None


def _within(session: Session, provider: str, rest: str) -> ProviderPath:
    if provider == FILESYSTEM:
        return _filesystem(rest, session.location)
    if provider == REGISTRY:
        canonical = canonical_key_path(rest if ":" in rest.split("\\", 1)[0] or "::" in rest
                                       else "Registry::" + rest)
        if canonical is None:
            raise PathProblem(f"Cannot find path '{rest}' because it does not exist.",
                              "PathNotFound", "ObjectNotFound", "ItemNotFoundException")
        return ProviderPath(REGISTRY, canonical)
    parts = [p for p in rest.replace("/", "\\").split("\\") if p and p != "."]
    return ProviderPath(provider, "\\".join(parts))


# --- items -----------------------------------------------------------------------------------


def _common(path: ProviderPath, parent: str, child: str, drive: str, container: bool) -> dict[str, object]:
    return {
        "PSPath": path.ps_path,
        "PSParentPath": PROVIDER_PREFIX[path.provider] + parent if parent or path.provider in (
            CERTIFICATE, ENVIRONMENT) else "",
        "PSChildName": child,
        "PSDrive": drive,
        "PSProvider": PROVIDER_PREFIX[path.provider].rstrip(":"),
        "PSIsContainer": container,
    }


def _mode(is_dir: bool) -> str:
    return "d-----" if is_dir else "-a----"


def file_item(session: Session, path: ProviderPath) -> PSObject:
    fs = session.machine.filesystem
    host = fs.host_path(path.path)
    stat = host.stat()
    is_dir = host.is_dir()
    parent, _, name = path.path.rpartition("\\")
    if parent.endswith(":"):
        parent += "\\"
    modified = dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC)
    props: dict[str, object] = {
        "Name": host.name if path.path != "C:\\" else "C:\\",
        "FullName": fs.windows_path(host),
        "Mode": _mode(is_dir),
        "LastWriteTime": modified,
        "Length": None if is_dir else stat.st_size,
        "Extension": "" if is_dir else os.path.splitext(host.name)[1],
        "BaseName": host.name if is_dir else os.path.splitext(host.name)[0],
        "Exists": True,
    }
    props.update(_common(path, parent, name, "C", is_dir))
    kind = "System.IO.DirectoryInfo" if is_dir else "System.IO.FileInfo"
    return PSObject([kind, "System.IO.FileSystemInfo"], props, string_form=name)


def certificate_item(location: str, store: str, certificate: Certificate) -> PSObject:
    """The ``Cert:`` provider's object for ``certificate`` in ``location\\store``: a fresh copy
    each time (a script may change it), made from one built per certificate and store (a node's
    Root store holds ~160 and every look lists them all)."""
    return PSObject.copy_of(_certificate_template(location, store, certificate))


@functools.lru_cache(maxsize=4096)
def _certificate_template(location: str, store: str, certificate: Certificate) -> PSObject:
    path = ProviderPath(CERTIFICATE, f"{location}\\{store}\\{certificate.thumbprint}")
    props: dict[str, object] = {
        "Thumbprint": certificate.thumbprint,
        "Subject": certificate.subject,
        "Issuer": certificate.issuer,
        "NotBefore": certificate.not_before,
        "NotAfter": certificate.not_after,
        "SerialNumber": certificate.serial_number,
        "FriendlyName": "",
        "HasPrivateKey": False,
    }
    props.update(_common(path, f"{location}\\{store}", certificate.thumbprint, "Cert", False))
    return PSObject(["System.Security.Cryptography.X509Certificates.X509Certificate2",
                     "System.Security.Cryptography.X509Certificates.X509Certificate"], props,
                    string_form=f"[Subject]\r\n  {certificate.subject}\r\n\r\n[Issuer]\r\n  "
                                f"{certificate.issuer}\r\n\r\n[Thumbprint]\r\n  "
                                f"{certificate.thumbprint}\r\n")


def store_item(store: CertStore) -> PSObject:
    path = ProviderPath(CERTIFICATE, f"{store.location}\\{store.name}")
    props: dict[str, object] = {"Name": store.name, "Location": store.location}
    props.update(_common(path, store.location, store.name, "Cert", True))
    return PSObject(["System.Security.Cryptography.X509Certificates.X509Store"], props,
                    display=("Name",), string_form=store.name)


def location_item(location: str) -> PSObject:
    path = ProviderPath(CERTIFICATE, location)
    props: dict[str, object] = {"Location": location, "StoreNames": None}
    props.update(_common(path, "", location, "Cert", True))
    return PSObject(["Microsoft.PowerShell.Commands.X509StoreLocation"], props,
                    display=("Location",), string_form=location)


def environment_item(name: str, value: str) -> PSObject:
    path = ProviderPath(ENVIRONMENT, name)
    props: dict[str, object] = {"Name": name, "Key": name, "Value": value}
    props.update(_common(path, "", name, "Env", False))
    return PSObject(["System.Collections.DictionaryEntry"], props, display=("Name", "Value"),
                    string_form="System.Collections.DictionaryEntry")


def registry_key_item(key: RegistryKey, subkey_count: int) -> PSObject:
    path = ProviderPath(REGISTRY, key.path)
    parent = key.path.rsplit("\\", 1)[0] if "\\" in key.path else ""
    props: dict[str, object] = {
        "Name": key.path,
        "Property": key.value_names(),
        "SubKeyCount": subkey_count,
        "ValueCount": len(key.values),
    }
    props.update(_common(path, parent, key.name, drive_path(key.path).split(":")[0], True))
    return PSObject(["Microsoft.Win32.RegistryKey"], props, string_form=key.path)


# --- provider operations ---------------------------------------------------------------------


def _store_parts(path: ProviderPath) -> list[str]:
    return [p for p in path.path.split("\\") if p]


def exists(session: Session, path: ProviderPath) -> bool:
    try:
        return bool(expand(session, path)) if path.has_wildcard else _exists(session, path)
    except PathProblem:
        return False


def _exists(session: Session, path: ProviderPath) -> bool:
    machine = session.machine
    if path.provider == FILESYSTEM:
        return machine.filesystem.exists(path.path)
    if path.provider == REGISTRY:
        return machine.registry.key(path.path) is not None
    if path.provider == ENVIRONMENT:
        return path.path == "" or path.path in session.environment
    parts = _store_parts(path)
    if not parts:
        return True
    if parts[0].lower() not in ("localmachine", "currentuser"):
        return False
    if len(parts) == 1:
        return True
    store = machine.stores.get(parts[0], parts[1])
    if store is None:
        return False
    return len(parts) == 2 or (len(parts) == 3 and store.get(parts[2]) is not None)


def is_container(session: Session, path: ProviderPath) -> bool:
    if path.provider == FILESYSTEM:
        return session.machine.filesystem.is_dir(path.path)
    if path.provider == REGISTRY:
        return True
    if path.provider == ENVIRONMENT:
        return path.path == ""
    return len(_store_parts(path)) < 3


def get_item(session: Session, path: ProviderPath) -> PSObject:
    if not _exists(session, path):
        raise not_found(path.display)
    machine = session.machine
    if path.provider == FILESYSTEM:
        return file_item(session, path)
    if path.provider == REGISTRY:
        key = machine.registry.key(path.path)
        assert key is not None
        return registry_key_item(key, len(machine.registry.subkeys(key.path)))
    if path.provider == ENVIRONMENT:
        if path.path == "":
            return PSObject(["System.Management.Automation.PSDriveInfo"], {"Name": "Env"},
                            string_form="Env")
        name = next(n for n in session.environment if n.lower() == path.path.lower())
        return environment_item(name, session.environment[name])
    parts = _store_parts(path)
    if not parts:
        return PSObject(["System.Management.Automation.PSDriveInfo"], {"Name": "Cert"},
                        string_form="Cert")
    location = "LocalMachine" if parts[0].lower() == "localmachine" else "CurrentUser"
    if len(parts) == 1:
        return location_item(location)
    store = machine.stores.get(location, parts[1])
    assert store is not None
    if len(parts) == 2:
        return store_item(store)
    certificate = store.get(parts[2])
    assert certificate is not None
    return certificate_item(location, store.name, certificate)


def child_items(session: Session, path: ProviderPath, recurse: bool = False) -> list[PSObject]:
    """``Get-ChildItem`` of a container (or the item itself for a leaf, as PowerShell does)."""
    if path.has_wildcard:
        return [get_item(session, match) for match in expand(session, path)]
    if not _exists(session, path):
        raise not_found(path.display)
    machine = session.machine
    if not is_container(session, path):
        return [get_item(session, path)]
    items: list[PSObject] = []
    if path.provider == FILESYSTEM:
        for entry in machine.filesystem.list_dir(path.path):
            child = ProviderPath(FILESYSTEM, entry)
            items.append(file_item(session, child))
            if recurse and machine.filesystem.is_dir(entry):
                items.extend(child_items(session, child, recurse))
        return items
    if path.provider == REGISTRY:
        for key in machine.registry.subkeys(path.path):
            items.append(registry_key_item(key, len(machine.registry.subkeys(key.path))))
            if recurse:
                items.extend(child_items(session, ProviderPath(REGISTRY, key.path), recurse))
        return items
    if path.provider == ENVIRONMENT:
        return [environment_item(name, session.environment[name])
                for name in sorted(session.environment, key=str.lower)]
    parts = _store_parts(path)
    if not parts:
        return [location_item("CurrentUser"), location_item("LocalMachine")]
    location = "LocalMachine" if parts[0].lower() == "localmachine" else "CurrentUser"
    if len(parts) == 1:
        for store in sorted(machine.stores.in_location(location), key=lambda s: s.name.lower()):
            items.append(store_item(store))
            if recurse:
                items.extend(certificate_item(location, store.name, cert)
                             for cert in store.certificates.values())
        return items
    found = machine.stores.get(location, parts[1])
    assert found is not None
    return [certificate_item(location, found.name, cert) for cert in found.certificates.values()]


def expand(session: Session, path: ProviderPath) -> list[ProviderPath]:
    """Resolve a wildcard in the last path component."""
    parent_text, _, leaf = path.path.rpartition("\\")
    if path.provider == FILESYSTEM and parent_text.endswith(":"):
        parent_text += "\\"
    parent = ProviderPath(path.provider, parent_text)
    if not _exists(session, parent) or not is_container(session, parent):
        return []
    pattern = wildcard_regex(leaf)
    return [ProviderPath(path.provider, _child_path(item))
            for item in child_items(session, parent)
            if pattern.match(str(item.get("PSChildName")))]


def _child_path(item: PSObject) -> str:
    return str(item.get("PSPath")).split("::", 1)[1]


def remove_item(session: Session, path: ProviderPath, recurse: bool) -> list[PathProblem]:
    """Remove an item; returns what a recursive delete could not remove (reported, not fatal)."""
    if not _exists(session, path):
        raise not_found(path.display)
    machine = session.machine
    if path.provider == FILESYSTEM:
        fs = machine.filesystem
        if fs.is_dir(path.path) and fs.list_dir(path.path) and not recurse:
            raise PathProblem(
                f"The item at {path.path} has children and the Recurse parameter was not "
                "specified. If you continue, all children will be removed with the item. Are you "
                "sure you want to continue?", "DirectoryNotEmpty", "WriteError", "IOException")
        return [PathProblem(f"Cannot remove item {kept}: Access to the path '{kept}' is denied.",
                            "RemoveFileSystemItemUnAuthorizedAccess", "PermissionDenied",
                            "UnauthorizedAccessException") for kept in fs.remove(path.path, recurse=True)]
    if path.provider == ENVIRONMENT:
        session.environment.pop(path.path, None)
        return []
    if path.provider == REGISTRY:
        machine.registry.remove_key(path.path)
        return []
    parts = _store_parts(path)
    if len(parts) != 3:
        raise PathProblem(f"Cannot remove the certificate store or location '{path.display}'. "
                          "The simulated node supports removing certificates only.",
                          "RemoveStoreNotSupported", "InvalidOperation", "NotSupportedException")
    store = machine.stores.get(parts[0], parts[1])
    assert store is not None
    store.remove(parts[2])
    return []
