"""An OpenSSH ``known_hosts`` file, read once: the keys it lists for an address and port. Shared by
the reconciler's strict host-key policy and the judge's probes of an existing cluster."""

from __future__ import annotations

from pathlib import Path

import asyncssh


class KnownHostsError(ValueError):
    """The file cannot be read as a known_hosts file."""


class KnownHosts:
    """A strict OpenSSH ``known_hosts`` file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._known = asyncssh.import_known_hosts(path.read_text())
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise KnownHostsError(f"cannot read known hosts {path}: {exc}") from None

    def keys(self, address: str, port: int) -> list[str]:
        """The keys listed for ``address``, OpenSSH format (``[address]:port`` entries first, as
        OpenSSH does; asyncssh also lets a bare ``address`` line match any port)."""
        host_keys = self._known.match(address, address, port)[0]
        # once each: asyncssh returns a line's key for the name and again for the address
        return list(dict.fromkeys(k.export_public_key("openssh").decode().strip() for k in host_keys))
