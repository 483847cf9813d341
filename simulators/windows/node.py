"""A running simulated Windows node: the machine state plus its SSH server and reboot cycle.

``Restart-Computer -Force`` returns at once; after ``shutdown_delay`` — and once every connection
accepted since the request has finished its first session, at most ``shutdown_hold_seconds``
(``nodeaccess.ShutdownHold``) — the node drops every SSH connection and refuses new ones (the
listener is closed) for ``reboot_duration`` (all on the host's own clock: time the lab could not
run does not count), then boots:
new boot id, sshd first, then the other services in stages — from the first look at them by
someone other than the judge (``_start_stages``) — with the environment the Service Control
Manager reads at boot.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncssh

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.certificates import Certificate
from proxyfleet.core.looplag import sleep_running
from proxyfleet.simulators.boots import BootRecord, ExitStatusLoss, OutageWatch, WatchedOutages, utc_now
from proxyfleet.simulators.kubelet import KubeletSettings, SimulatedKubelet
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.nodeaccess import (
    SHUTDOWN_HOLD_SECONDS,
    AccessibleNode,
    NodeAccess,
    ShutdownHold,
    listen_until_bound,
)
from proxyfleet.simulators.windows.environment import EnvironmentBlock
from proxyfleet.simulators.windows.kubelet import WindowsKubeletHost
from proxyfleet.simulators.windows.machine import LAST_STAGE, MachineSettings, WindowsMachine
from proxyfleet.simulators.windows.powershell.commands import CommandTable, default_commands
from proxyfleet.simulators.windows.session import Session
from proxyfleet.simulators.windows.shell import run_exec, run_interactive
from proxyfleet.simulators.windows.sshserver import NodeSFTPServer, NodeSSHServer

log = logging.getLogger(__name__)
COMMAND_LINES_KEPT = 200


@dataclass
class NodeConfig(NodeAccess):
    username: str = "Administrator"
    shutdown_delay: float = 0.3
    # ... then it waits at most this long for connections accepted since the restart request to
    # finish their first session (``ShutdownHold``)
    shutdown_hold_seconds: float = SHUTDOWN_HOLD_SECONDS
    reboot_duration: float = 1.0
    # After a reboot sshd answers first; each later boot stage (containerd, then kubelet and the
    # config daemon, then kube-proxy and hybrid-overlay, then delayed-start services) starts this
    # many seconds after the one before. Real hosts take tens of seconds to minutes.
    service_stage_seconds: float = 0.25
    # ... and the stages begin only once a session other than the lab's own observation has read
    # the services' state in the new boot (Get-Service, Get-Process, Win32_Service), or after
    # this many seconds if nobody does: a real host's services come tens of seconds after sshd,
    # longer than any reconciler takes to reconnect, and the lab's compressed stages must not
    # depend on how fast a starved lab lets it reconnect (see ``services_seen``).
    service_hold_seconds: float = 2.0
    # Keys among ``authorized_keys`` whose sessions are the lab's own observation (the judge's):
    # what they read holds nothing back and releases nothing.
    observer_keys: list[asyncssh.SSHKey] = field(default_factory=list)
    # How often Restart-Computer over SSH ends without an exit status (the session is cut
    # first, OCPBUGS-90077); decided per reboot by a generator seeded from ``seed`` and the name.
    lost_exit_status_rate: float = 0.0
    seed: int = 0
    restart_reads_current_environment: bool = False
    default_shell: str = "cmd"  # OpenSSH's DefaultShell: "cmd" (Windows' default) or "powershell"
    public_roots: list[Certificate] = field(default_factory=list)
    network: LabNetwork | None = None  # where the node's egress resolves names
    kubelet: KubeletSettings | None = None  # None: no simulated kubelet talks to an API server


class WindowsNode(AccessibleNode, WatchedOutages):
    """One node on its own loopback address."""

    config: NodeConfig

    def __init__(self, config: NodeConfig, commands: CommandTable | None = None,
                 clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.config = config
        self.commands = commands or default_commands()
        self.machine = WindowsMachine.create(
            MachineSettings(hostname=config.name, username=config.username,
                            restart_reads_current_environment=config.restart_reads_current_environment,
                            default_shell=config.default_shell),
            config.state_dir, clock)
        for certificate in config.public_roots:
            self.machine.stores.machine_root.add(certificate)
        self.authorized_key_data = {key.public_data for key in config.authorized_keys}
        self.observer_key_data = {key.public_data for key in config.observer_keys}
        self._services_seen = asyncio.Event()  # this boot's services read by a non-observer
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self.shutdown_hold = ShutdownHold()
        self.watch = OutageWatch(self)  # outages, and the lab's observers of their edges
        # False from the moment sshd stops: a connection the old listener had accepted but not yet
        # handed to sshd is cut when it arrives (see NodeSSHServer), or the listener's
        # wait_closed() would wait for it for as long as its client keeps it open.
        self.serving = False
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._reboot: asyncio.Task[None] | None = None
        self._stages: asyncio.Task[None] | None = None  # the boot stages still to come
        self.exit_statuses = ExitStatusLoss(config.seed, config.name)  # decided when a restart is requested
        self._sessions = 0
        # What a reconciler costs this node: SSH connections accepted and exec requests served.
        self.ssh_connections = 0
        self.ssh_commands = 0
        # The latest exec command lines, as Windows' process-creation events (4688) would record
        # them: lab evidence that no secret travels on a command line.
        self.command_lines: collections.deque[str] = collections.deque(maxlen=COMMAND_LINES_KEPT)
        self._flush_pending = False
        self.kubelet = (SimulatedKubelet(WindowsKubeletHost(self.machine), config.address, config.network,
                                         config.kubelet) if config.kubelet is not None else None)
        self.machine.listeners.append(self._on_machine_event)

    # --- identity ---------------------------------------------------------------------------

    @property
    def username(self) -> str:
        return self.config.username

    @property
    def network(self) -> LabNetwork | None:
        return self.config.network

    @property
    def is_listening(self) -> bool:
        return self._acceptor is not None

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.machine.is_up:
            self.machine.boot()
        await self._listen()

    async def _listen(self) -> None:
        self.serving = True
        self._acceptor = await asyncssh.listen(
            host=self.address, port=self.port, reuse_address=True,
            server_factory=lambda: NodeSSHServer(self),
            server_host_keys=[self.config.host_key],
            process_factory=self._handle_process,
            sftp_factory=lambda chan: NodeSFTPServer(chan, self.machine.filesystem,
                                                     rf"C:\Users\{self.username}"),
            encoding="utf-8", errors="replace", allow_scp=False,
            line_editor=True, max_line_length=65536, login_timeout=30,
            keepalive_interval=0)
        self.watch.came_up(self.machine.now())

    async def _stop_listening(self) -> None:
        """Refuse new connections and cut every open one.

        The connections are aborted *before* waiting for the listener: since Python 3.12.1
        ``Server.wait_closed()`` waits until every connection it accepted has closed, so waiting
        first would block for as long as any client keeps its session open."""
        self.serving = False
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:
            acceptor.close()
        for connection in list(self.connections):
            connection.abort()
        self.connections.clear()
        if acceptor is not None:
            await acceptor.wait_closed()

    async def _go_down(self, requested_at: dt.datetime | None = None) -> None:
        await self._stop_listening()
        self.watch.went_down(self.machine.now(), requested_at)

    async def stop(self) -> None:
        """Stop serving (power off); safe to call more than once."""
        reboot, self._reboot = self._reboot, None
        await stop_task(reboot)
        await self._stop_listening()
        stages, self._stages = self._stages, None
        await stop_task(stages)
        if self.machine.is_up:
            self.machine.shutdown()
        if self.kubelet is not None:
            self.kubelet.stop()
        self._flush_lab_state()

    # --- runtime services for sessions ---------------------------------------------------------

    def request_reboot(self) -> None:
        if self._reboot is not None and not self._reboot.done():
            return
        self.exit_statuses.decide(self.config.lost_exit_status_rate)
        self.shutdown_hold.begin()
        self._reboot = asyncio.get_running_loop().create_task(
            self._reboot_cycle(self.machine.now()), name=f"reboot {self.name}")
        self._reboot.add_done_callback(self._reboot_ended)

    def _reboot_ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: the reboot failed, the machine is left without sshd: %r", self.name, task.exception())

    async def _reboot_cycle(self, requested_at: dt.datetime) -> None:
        # Windows takes a while to go down, on the host's own clock (``sleep_running``): a lab
        # that could not run meanwhile would otherwise close the window before a reconciler that
        # was stalled with it could look — hiding one that treats the old boot as "back".
        await sleep_running(self.config.shutdown_delay)
        # ... and not while a reconciler that reconnected in the window is still on its first
        # command: a busy loop must not cut it mid-way (see ShutdownHold)
        await self.shutdown_hold.wait(self.config.shutdown_hold_seconds)
        hang = self.watch.hangs()  # decided before anyone hears it go down
        await self._go_down(requested_at)
        self._cancel_stages()
        self.machine.shutdown()
        if hang:
            await asyncio.Event().wait()  # never boots again (until the fleet stops it)
        # Down on the host's clock too: a lab stalled meanwhile would otherwise bring the node back
        # before a reconciler stalled with it could act (one that took the old boot for "back" is
        # caught by its uncordon landing before the node is back: early-reachability).
        await sleep_running(self.config.reboot_duration)  # simulated: firmware, boot
        self.machine.boot(up_to_stage=0)  # sshd first
        self._services_seen = asyncio.Event()
        await self._listen_again()
        self._stages = asyncio.get_running_loop().create_task(self._start_stages(), name=f"boot stages {self.name}")

    async def _start_stages(self) -> None:
        """The boot stages after sshd, ``service_stage_seconds`` apart on the host's own clock:
        time the lab's loop could not run does not count (``sleep_running``), as for a kubelet's
        container stop. A real host's services come tens of seconds after sshd; here 0.6 s, and
        only from the moment someone other than the judge first read their state in this boot
        (``services_seen``; at most ``service_hold_seconds`` of the host's clock after sshd). So a
        reconciler's first look after it reconnects sees them not started *whatever the
        machine's speed*: one that verifies once right after SSH returns is caught every time,
        not only when a starved lab let it reconnect within 0.6 s."""
        loop = asyncio.get_running_loop()
        held = [loop.create_task(self._services_seen.wait()),
                loop.create_task(sleep_running(self.config.service_hold_seconds))]
        try:
            await asyncio.wait(held, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in held:
                task.cancel()
        began = time.monotonic()
        for stage in range(1, LAST_STAGE + 1):
            await sleep_running(stage * self.config.service_stage_seconds, began)
            self.machine.start_stage(stage)

    def services_seen(self) -> None:
        """A session other than the lab's own observation read the services' state: the boot's
        held stages begin (idempotent; nothing once they have)."""
        self._services_seen.set()

    async def _listen_again(self) -> None:
        """sshd starting again after it stopped (a boot, a new host key, the end of an outage)."""
        await listen_until_bound(self._listen, self.config)

    def _cancel_stages(self) -> None:
        stages, self._stages = self._stages, None
        if stages is not None:
            stages.cancel()  # a shutdown: the stages still to come never start

    async def replace_host_key(self) -> None:
        """A new SSH host key, as after a reinstall or a restored image: sshd restarts with it (open
        sessions are cut; no outage is recorded: the machine stays up)."""
        self.config.host_key = asyncssh.generate_private_key("ssh-ed25519")
        await self._stop_listening()
        await self._listen_again()

    async def go_offline(self) -> None:
        """Drop off the network (an outage, not a reboot): connections cut, new ones refused."""
        await self._go_down()

    async def come_online(self) -> None:
        """End an outage started by ``go_offline``."""
        await self._listen_again()

    def _keeps_exit_status(self) -> bool:
        return self.exit_statuses.keeps(self._reboot is not None and not self._reboot.done())

    @property
    def lost_exit_statuses(self) -> int:
        """Exec sessions that ended without their exit status (lab evidence)."""
        return self.exit_statuses.count

    def active_sessions(self) -> int:
        return self._sessions

    async def _handle_process(self, process: asyncssh.SSHServerProcess[str]) -> None:
        self._sessions += 1
        connection = process.channel.get_connection()
        try:
            peer = process.get_extra_info("peername")
            local = process.get_extra_info("sockname")
            server = connection.get_owner()
            session = Session(self.machine, process.get_extra_info("username"), self,
                              client=(peer[0], peer[1]) if peer else None,
                              server=(local[0], local[1]) if local else None,
                              observer=isinstance(server, NodeSSHServer) and server.observer)
            if process.command is not None:
                self.ssh_commands += 1
                self.command_lines.append(process.command)
                await run_exec(process, session, self.commands, self._keeps_exit_status)
            else:
                await run_interactive(process, session, self.commands)
        except (asyncssh.ConnectionLost, BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # keep serving other sessions whatever one session does
            log.exception("session on %s failed", self.name)
            process.stderr.write("Internal error in the simulated node; see the lab log.\r\n")
            process.exit(1)
        finally:
            self._sessions -= 1
            self.shutdown_hold.release(connection)  # its first session is over

    # --- lab-side views (real Windows offers none of these) -----------------------------------

    def process_environment(self, service: str) -> dict[str, str] | None:
        """The environment the service's running process started with, or None if stopped."""
        record = self.machine.service(service)
        if record is None or record.process is None:
            return None
        return dict(record.process.environment)

    @property
    def boots(self) -> list[BootRecord]:
        return self.machine.boots

    def _on_machine_event(self, kind: str, data: dict[str, Any]) -> None:
        if self.kubelet is not None and kind in ("service-started", "service-stopped") \
                and data["service"].name == "kubelet":
            if kind == "service-started":
                self.kubelet.start(EnvironmentBlock(data["process"].environment))
            else:
                self.kubelet.stop()
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush_lab_state()
            return
        self._flush_pending = True
        loop.call_soon(self._flush_lab_state)

    def _flush_lab_state(self) -> None:
        """Write ``lab/processes.json``: what each service process started with."""
        self._flush_pending = False
        directory = self.config.state_dir / "lab"
        directory.mkdir(exist_ok=True)
        state = {
            "boots": [{"boot_id": b.boot_id, "number": b.number,
                       "booted_at": b.booted_at.isoformat(),
                       "shutdown_at": b.shutdown_at.isoformat() if b.shutdown_at else None}
                      for b in self.machine.boots],
            "services": {
                s.name: None if s.process is None else {
                    "pid": s.process.pid, "started_at": s.process.started_at.isoformat(),
                    "boot_id": s.process.boot_id, "environment": s.process.environment}
                for s in self.machine.services.values()},
        }
        target = directory / "processes.json"
        temporary = directory / "processes.json.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            # One string from the C encoder: json.dump (and any indent) takes the pure-Python one.
            handle.write(json.dumps(state))
        temporary.replace(target)
