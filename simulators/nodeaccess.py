"""What every simulated node, Windows or Linux, shares for being reached: where it listens, its
host key, the keys it lets in — and sshd's policy for them: public keys only, deny by default."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import asyncssh
from asyncssh.connection import SSHConnection

from proxyfleet.core.looplag import sleep_running

log = logging.getLogger(__name__)
SSHD_RECOVERY_SECONDS = 0.5  # how soon a failed sshd is started again
# How long at most a going-down host waits for the connections it accepted after the restart
# was asked for (``ShutdownHold``), on the host's own clock: a real host's shutdown takes seconds.
SHUTDOWN_HOLD_SECONDS = 2.0


@dataclass
class NodeAccess:
    """One node's name, SSH endpoint, state directory, host key and authorized keys."""

    name: str
    address: str
    port: int
    state_dir: Path
    host_key: asyncssh.SSHKey
    authorized_keys: list[asyncssh.SSHKey]


class AccessibleNode:
    """What a node of either kind says of itself from its ``config``."""

    config: NodeAccess

    @property
    def name(self) -> str:
        """The node's host name (its Node's name too)."""
        return self.config.name

    @property
    def address(self) -> str:
        return self.config.address

    @property
    def port(self) -> int:
        """The port it listens on (the one asked for, or the one the system chose for 0 at its
        first start), down or up."""
        return self.config.port

    @property
    def host_key_openssh(self) -> str:
        """The host's public key as a known_hosts entry names it."""
        return self.config.host_key.export_public_key("openssh").decode().strip()


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


class ShutdownHold:
    """A host asked to restart still answers for a while; here: until every connection it accepted
    since the request — but the lab's own observation's — has finished its first session (or
    closed), at most ``SHUTDOWN_HOLD_SECONDS`` of the host's clock past the shutdown delay.

    A real host takes seconds to go down, longer than any reconciler's reconnect and one command,
    so one that reconnects at once and takes the old boot for "back" always gets to act on it.
    The compressed lab keeps that order by construction rather than by the machine's speed: a
    loop busy elsewhere (not stalled, which ``sleep_running`` already discounts) would otherwise
    cut such a reconciler's first command mid-way, and it would then verify the real new boot
    and escape (self-test ``early-reachability``). Connections accepted before the request (the
    one that asked) hold nothing."""

    def __init__(self) -> None:
        self.asked = False  # between a restart request and the end of ``wait``
        self._held: set[SSHConnection] = set()
        self._released = asyncio.Event()
        self._released.set()

    def begin(self) -> None:
        """A restart was asked for: the connections accepted from now on hold it."""
        self.asked = True
        self._held.clear()
        self._released.set()

    def accepted(self, conn: asyncssh.SSHServerConnection) -> None:
        if self.asked:
            self._held.add(conn)
            self._released.clear()

    def release(self, conn: SSHConnection) -> None:
        """``conn`` finished its first session, closed, or is the lab's own observation."""
        self._held.discard(conn)
        if not self._held:
            self._released.set()

    @property
    def holding(self) -> int:
        """Connections the window still waits for."""
        return len(self._held)

    async def wait(self, within: float = SHUTDOWN_HOLD_SECONDS) -> None:
        """Until nothing holds the shutdown, at most ``within`` seconds the loop could run; the
        window is over then (later connections hold nothing)."""
        loop = asyncio.get_running_loop()
        waits = [loop.create_task(self._released.wait()), loop.create_task(sleep_running(within))]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            self.asked = False
            self._held.clear()
            self._released.set()


class ServingNode(Protocol):
    """What sshd's connection bookkeeping needs of a node."""

    serving: bool  # False from the moment its sshd stops (going down, an outage)
    connections: set[asyncssh.SSHServerConnection]  # open ones: a going-down node cuts them
    shutdown_hold: ShutdownHold  # the connections a restart's shutdown waits for


class NodeSSHServer(PublicKeyOnlyServer):
    """One connection to a node's sshd: kept in the node's ``connections`` while it lasts, cut at
    once if it reaches sshd after sshd stopped."""

    def __init__(self, node: ServingNode) -> None:
        self.serving_node = node
        self.connection: asyncssh.SSHServerConnection | None = None
        self.observer = False  # logged on with one of the lab's observer keys (the judge's)

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.connection = conn
        if not self.serving_node.serving:
            # Accepted by a listener that has closed since (asyncio hands a connection to its
            # protocol one loop turn after accepting it): the node is going down, so is this.
            asyncio.get_running_loop().call_soon(conn.abort)
            return
        self.serving_node.connections.add(conn)
        self.serving_node.shutdown_hold.accepted(conn)
        self.admitted(conn)

    def auth_completed(self) -> None:
        if self.observer and self.connection is not None:
            self.serving_node.shutdown_hold.release(self.connection)  # the judge's looks hold nothing

    def admitted(self, conn: asyncssh.SSHServerConnection) -> None:
        """A connection the node now serves (for a node's own counts)."""

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connection is not None:
            self.serving_node.connections.discard(self.connection)
            self.serving_node.shutdown_hold.release(self.connection)


async def listen_until_bound(listen: Callable[[], Awaitable[None]], node: NodeAccess) -> None:
    """Start a node's sshd again after it stopped (a boot, a new host key, the end of an outage).
    While its port is taken — by an outgoing connection of the node's own, when the port is in the
    ephemeral range — it fails and is started again, as Windows' service recovery and systemd's
    ``Restart=`` do, instead of leaving the node up and unreachable."""
    while True:
        try:
            await listen()
            return
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            log.warning("%s: sshd cannot listen on %s:%s (%s); starting it again in %.1f s", node.name,
                        node.address, node.port, exc.strerror, SSHD_RECOVERY_SECONDS)
            await asyncio.sleep(SSHD_RECOVERY_SECONDS)
