"""What every simulated node, Windows or Linux, shares for being reached: where it listens, its
host key, the keys it lets in — and sshd's policy for them: public keys only, deny by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import asyncssh


@dataclass
class NodeAccess:
    """One node's name, SSH endpoint, state directory, host key and authorized keys."""

    name: str
    address: str
    port: int
    state_dir: Path
    host_key: asyncssh.SSHKey
    authorized_keys: list[asyncssh.SSHKey]


class PublicKeyOnlyServer(asyncssh.SSHServer):
    """sshd's authentication as the nodes are configured: an authorized public key, nothing else
    (no passwords, keyboard-interactive or host-based); ``accepts`` says whose key gets in."""

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def host_based_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return self.accepts(username, key)

    def accepts(self, username: str, key: asyncssh.SSHKey) -> bool:
        """Whether ``username`` may log in with ``key`` (nobody, unless a node says otherwise)."""
        return False
