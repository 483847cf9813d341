"""sshd's policy every simulated node shares: public keys only, nobody unless the node says so."""

from __future__ import annotations

import asyncssh

from proxyfleet.simulators.nodeaccess import PublicKeyOnlyServer


def test_only_public_keys_are_offered_and_nobody_is_let_in_by_default() -> None:
    server = PublicKeyOnlyServer()
    key = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()
    assert server.begin_auth("anyone") is True  # authentication is always required
    assert server.public_key_auth_supported()
    assert not (server.password_auth_supported() or server.kbdint_auth_supported()
                or server.host_based_auth_supported())
    assert server.validate_public_key("root", key) is False


def test_a_node_says_whose_key_gets_in() -> None:
    allowed = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()

    class Node(PublicKeyOnlyServer):
        def accepts(self, username: str, key: asyncssh.SSHKey) -> bool:
            return username == "core" and key.public_data == allowed.public_data

    assert Node().validate_public_key("core", allowed)
    assert not Node().validate_public_key("root", allowed)
