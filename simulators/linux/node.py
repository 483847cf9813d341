"""A running simulated Linux node: its tree, its systemd, and an OpenSSH-like server on it.

The node boots on ``start`` (its enabled services started with their units' environment), then
listens: public-key authentication only, for its one user (``core`` on RHCOS, as there); each
exec request runs in a real ``/bin/sh`` on the node's tree (``nodeshell``), as root — the node's
user may ``sudo`` anything, as ``core`` may. stdin, stdout and stderr stream both ways, bytes as
they are; the exit status is the shell's.

Not modelled yet (said, never guessed): interactive shells (a shell request without a command is
refused), SFTP, reboots, the node's kubelet on the control plane, egress.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import asyncssh

from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel
from proxyfleet.simulators.linux.nodemounts import NodeMounts
from proxyfleet.simulators.linux.noderoot import Flavour, create_root
from proxyfleet.simulators.linux.nodeshell import NodeCommand, install_commands, start_on_node
from proxyfleet.simulators.linux.servicemanager import ServiceManager
from proxyfleet.simulators.nodeaccess import NodeAccess, PublicKeyOnlyServer

log = logging.getLogger(__name__)
NO_SHELL = "proxyfleet: interactive shells are not modelled on simulated Linux nodes; send a command\n"


@dataclass
class LinuxNodeConfig(NodeAccess):
    """One Linux node: who it is, where it listens, what it trusts to log in, what it runs."""

    flavour: Flavour
    system_cas_pem: bytes
    username: str = "core"
    clock: Callable[[], float] = time.monotonic  # the node's (called from worker threads too)


class _Server(PublicKeyOnlyServer):
    """Deny by default: only the node's user, with an authorized key."""

    def __init__(self, node: LinuxNode) -> None:
        self.node = node

    def accepts(self, username: str, key: asyncssh.SSHKey) -> bool:
        # Linux user names are case-sensitive
        return username == self.node.config.username and key.public_data in self.node.authorized_key_data


class LinuxNode:
    """A simulated Linux node on one event loop: ``await start()``, ``await stop()``."""

    def __init__(self, config: LinuxNodeConfig) -> None:
        self.config = config
        self.root = config.state_dir / "root"
        self.model = LinuxNodeModel(self.root, config.flavour, ServiceManager(self.root, hostname=config.name),
                                    config.clock)
        self.mounts = NodeMounts(self.root)
        self.authorized_key_data = {key.public_data for key in config.authorized_keys}
        self.commands_run = 0
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._running: set[NodeCommand] = set()

    @property
    def host_key_openssh(self) -> str:
        """The host's public key as a known_hosts entry names it."""
        return self.config.host_key.export_public_key("openssh").decode().strip()

    async def start(self) -> None:
        """Lay out the node (first start only), boot it, and listen."""
        if not self.root.exists():
            await asyncio.to_thread(create_root, self.root, self.config.flavour, self.config.system_cas_pem,
                                    self.config.name)
        await asyncio.to_thread(self.mounts.prepare)
        await asyncio.to_thread(install_commands, self.model)
        self.model.systemd.boot(self.config.flavour.enabled, self.model.clock())
        self._acceptor = await asyncssh.listen(
            host=self.config.address, port=self.config.port, reuse_address=True,
            server_factory=lambda: _Server(self), server_host_keys=[self.config.host_key],
            process_factory=self._handle_process, encoding=None, allow_scp=False,
            login_timeout=30, keepalive_interval=0)

    @property
    def port(self) -> int:
        """The port it listens on (the one asked for, or the one the system chose for 0)."""
        assert self._acceptor is not None
        return int(self._acceptor.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and end every command still running."""
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:
            acceptor.close()
        for running in list(self._running):
            await running.close()
        if acceptor is not None:
            await acceptor.wait_closed()

    async def _handle_process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        if process.command is None:
            process.stderr.write(NO_SHELL.encode())
            process.exit(1)
            return
        self.commands_run += 1
        running = await start_on_node(self.model, self.mounts, process.command)
        self._running.add(running)
        feeding = asyncio.create_task(_feed_stdin(process, running))
        try:
            await asyncio.gather(_forward(running.process.stdout, process.stdout),
                                 _forward(running.process.stderr, process.stderr))
            code = await running.finished()
            process.exit(code)  # as sshd: the command's end ends the channel, whatever stdin still had
        except (asyncssh.ConnectionLost, asyncssh.BreakReceived, BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # keep serving other sessions whatever one session does
            log.exception("command on %s failed", self.config.name)
            with contextlib.suppress(Exception):
                process.stderr.write(b"Internal error in the simulated node; see the lab log.\n")
                process.exit(1)
        finally:
            feeding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await feeding
            self._running.discard(running)
            await running.close()


async def _feed_stdin(process: asyncssh.SSHServerProcess[bytes], running: NodeCommand) -> None:
    """The client's input to the command, then its end of input; until either side is gone."""
    target = running.process.stdin
    assert target is not None
    with contextlib.suppress(asyncssh.BreakReceived, asyncssh.SignalReceived, asyncssh.TerminalSizeChanged,
                             BrokenPipeError, ConnectionResetError):
        while data := await process.stdin.read(65536):
            target.write(data)
            await target.drain()
        target.close()


async def _forward(source: asyncio.StreamReader | None, target: asyncssh.SSHWriter[bytes]) -> None:
    """The command's output to the client, flow-controlled, until the command closes it."""
    assert source is not None
    while data := await source.read(65536):
        target.write(data)
        await target.drain()
