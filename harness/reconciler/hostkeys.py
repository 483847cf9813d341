"""Which SSH host key each instance must present, before anything is sent to it.

Two policies:

- **Pinned on first contact** (the default): the key a node presents the first time is recorded
  in the ConfigMap ``PINS_CONFIGMAP`` of the reconciler's own namespace — an object only that
  namespace's administrators may write (not a Node annotation: a kubelet may patch its own Node).
  The pin is written, and must be confirmed by the API server, *before* the first script or file
  goes out. A later mismatch stops all traffic to that address until an administrator changes or
  deletes its pin (a replaced instance).
- **Strict** (``proxyfleet reconcile --known-hosts FILE``): only hosts listed in an OpenSSH
  ``known_hosts`` file are contacted, with exactly the keys listed there; any other is refused
  without connecting.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh
from kubernetes import client
from kubernetes.client.exceptions import ApiException

PINS_CONFIGMAP = "proxyfleet-ssh-host-keys"
# ConfigMap keys allow [-._a-zA-Z0-9]; instance addresses (DNS names, IPv4) fit as they are.
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class HostKeyPolicyError(RuntimeError):
    """A host that must not be contacted; ``reason`` is the Event reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Expectation:
    """What to require of a host: ``key`` (OpenSSH public key text), or None on first contact."""

    key: str | None
    first_contact: bool


class KnownHosts:
    """A strict OpenSSH ``known_hosts`` file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._known = asyncssh.import_known_hosts(path.read_text())
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise HostKeyPolicyError("InvalidKnownHosts", f"cannot read known hosts {path}: {exc}") from None

    def keys(self, address: str, port: int) -> list[str]:
        """The keys listed for ``address`` (``[address]:port`` entries first, as OpenSSH does)."""
        host_keys = self._known.match(address, address, port)[0]
        return [k.export_public_key("openssh").decode().strip() for k in host_keys]


class HostKeyPins:
    """Pins in a ConfigMap of the reconciler's namespace (read from the watch cache)."""

    def __init__(self, api: client.ApiClient, namespace: str, known_hosts: KnownHosts | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.known_hosts = known_hosts
        self._lock = asyncio.Lock()  # pins are written one at a time: each write reads the latest

    def expectation(self, address: str, port: int, configmaps: dict[str, dict[str, Any]]) -> Expectation:
        """The key ``address`` must present; raises ``HostKeyPolicyError`` for a host that may
        not be contacted at all (strict mode, unlisted)."""
        if self.known_hosts is not None:
            keys = self.known_hosts.keys(address, port)
            if not keys:
                raise HostKeyPolicyError("HostKeyUnknown", f"{address} is not in the known hosts file "
                                                           f"{self.known_hosts.path}; refusing to contact it")
            return Expectation(keys[0], first_contact=False)
        pinned = ((configmaps.get(PINS_CONFIGMAP) or {}).get("data") or {}).get(address)
        return Expectation(pinned or None, first_contact=not pinned)

    async def pin(self, address: str, key: str) -> None:
        """Record ``key`` for ``address``; returns only once the API server has stored it.
        Refuses to overwrite a different pin (someone else's first contact won)."""
        if not _KEY.match(address):
            raise HostKeyPolicyError("HostKeyNotPinned", f"cannot pin a host key for {address!r}: not a valid "
                                                         "ConfigMap key")
        async with self._lock:
            try:
                await asyncio.to_thread(self._pin, address, key)
            except ApiException as exc:
                raise HostKeyPolicyError("HostKeyNotPinned", f"recording the SSH host key of {address} failed "
                                                             f"({exc.status} {exc.reason}); nothing was sent") from None

    def _pin(self, address: str, key: str) -> None:
        for _ in range(5):  # optimistic concurrency: re-read and retry on a conflict
            try:
                current = self.core.read_namespaced_config_map(PINS_CONFIGMAP, self.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=PINS_CONFIGMAP, namespace=self.namespace),
                                          data={address: key})
                try:
                    self.core.create_namespaced_config_map(self.namespace, body)
                    return
                except ApiException as conflict:
                    if conflict.status == 409:
                        continue
                    raise
            data = dict(current.data or {})
            if data.get(address) not in (None, key):
                raise HostKeyPolicyError("HostKeyMismatch", f"{address} already has a different pinned host key")
            data[address] = key
            current.data = data
            try:
                self.core.replace_namespaced_config_map(PINS_CONFIGMAP, self.namespace, current)
                return
            except ApiException as exc:
                if exc.status != 409:
                    raise
        raise HostKeyPolicyError("HostKeyNotPinned", f"recording the SSH host key of {address} kept conflicting")
