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

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.knownhosts import KnownHosts as KnownHostsFile
from proxyfleet.core.knownhosts import KnownHostsError

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


class KnownHosts(KnownHostsFile):
    """A strict OpenSSH ``known_hosts`` file; one that cannot be read is a policy error."""

    def __init__(self, path: Path) -> None:
        try:
            super().__init__(path)
        except KnownHostsError as exc:
            raise HostKeyPolicyError("InvalidKnownHosts", str(exc)) from None


class HostKeyPins:
    """Pins in a ConfigMap of the reconciler's namespace (read from the watch cache)."""

    def __init__(self, api: client.ApiClient, namespace: str, known_hosts: KnownHosts | None = None) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.known_hosts = known_hosts
        # First contacts that arrive together (a new fleet: hundreds at once) share one write.
        self._pending: dict[str, tuple[str, asyncio.Future[None]]] = {}
        self._writer: asyncio.Task[None] | None = None
        self.writes = 0

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
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[address] = (key, done)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_pending(), name="pin host keys")
        await done

    async def close(self) -> None:
        """Stop writing; first contacts still waiting fail (nothing was sent to them)."""
        await stop_task(self._writer)
        for _, done in self._pending.values():
            if not done.done():
                done.set_exception(HostKeyPolicyError("HostKeyNotPinned", "the reconciler is stopping"))
        self._pending.clear()

    async def _write_pending(self) -> None:
        """Write every pin waiting, in one update per batch, until none waits."""
        while self._pending:
            batch, self._pending = self._pending, {}
            try:
                refused = await asyncio.to_thread(self._pin, {a: k for a, (k, _) in batch.items()})
                self.writes += 1
            except ApiException as exc:
                error = HostKeyPolicyError("HostKeyNotPinned", f"recording SSH host keys failed ({exc.status} "
                                                               f"{exc.reason}); nothing was sent")
                for _, done in batch.values():
                    done.set_exception(error)
                continue
            except HostKeyPolicyError as error:
                for _, done in batch.values():
                    done.set_exception(error)
                continue
            for address, (_, done) in batch.items():
                if address in refused:
                    done.set_exception(HostKeyPolicyError("HostKeyMismatch", f"{address} already has a different "
                                                                             "pinned host key"))
                else:
                    done.set_result(None)

    def _pin(self, pins: dict[str, str]) -> set[str]:
        """Store ``pins``; returns the addresses that already had a different one (not changed)."""
        for _ in range(5):  # optimistic concurrency: re-read and retry on a conflict
            try:
                current = self.core.read_namespaced_config_map(PINS_CONFIGMAP, self.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=PINS_CONFIGMAP, namespace=self.namespace),
                                          data=dict(pins))
                try:
                    self.core.create_namespaced_config_map(self.namespace, body)
                    return set()
                except ApiException as conflict:
                    if conflict.status == 409:
                        continue
                    raise
            data = dict(current.data or {})
            refused = {a for a, k in pins.items() if data.get(a) not in (None, k)}
            if all(data.get(a) == k for a, k in pins.items() if a not in refused):
                return refused  # nothing new to store
            data.update({a: k for a, k in pins.items() if a not in refused})
            current.data = data
            try:
                self.core.replace_namespaced_config_map(PINS_CONFIGMAP, self.namespace, current)
                return refused
            except ApiException as exc:
                if exc.status != 409:
                    raise
        raise HostKeyPolicyError("HostKeyNotPinned", "recording SSH host keys kept conflicting")
