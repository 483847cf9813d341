"""sshd's policy every simulated node shares: public keys only, nobody unless the node says so."""

from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path

import asyncssh
import pytest

from proxyfleet.simulators.nodeaccess import NodeAccess, PublicKeyOnlyServer, listen_until_bound


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


NODE = NodeAccess("worker-a", "127.0.0.1", 0, Path("/nonexistent"), asyncssh.generate_private_key("ssh-ed25519"), [])


async def test_sshd_whose_port_is_taken_is_started_again_until_it_binds(caplog: pytest.LogCaptureFixture) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    tries: list[int] = []
    bound: list[asyncio.Server] = []

    async def listen() -> None:
        tries.append(port)
        if len(tries) == 2:
            holder.close()  # whoever held the port let it go
        bound.append(await asyncio.start_server(lambda r, w: None, "127.0.0.1", port))

    await listen_until_bound(listen, NODE)
    assert len(tries) == 2 and len(bound) == 1  # refused once (address in use), then bound
    assert "worker-a: sshd cannot listen on 127.0.0.1:0 (" in caplog.text and "address already in use" in caplog.text
    bound[0].close()
    await bound[0].wait_closed()


async def test_any_other_failure_to_listen_is_raised() -> None:
    async def listen() -> None:
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    with pytest.raises(OSError, match="Cannot assign requested address"):
        await listen_until_bound(listen, NODE)

