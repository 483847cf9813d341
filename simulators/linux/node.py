"""A running simulated Linux node: its tree, its systemd, and an OpenSSH-like server on it.

The node boots on ``start`` (its enabled services started with their units' environment), then
listens: public-key authentication only, for its one user (``core`` on RHCOS, as there); each
exec request runs in a real ``/bin/sh`` on the node's tree (``nodeshell``), as root — the node's
user may ``sudo`` anything, as ``core`` may. stdin, stdout and stderr stream both ways, bytes as
they are; the exit status is the shell's.

A reboot (``systemctl reboot``, ``reboot``, ``shutdown -r now``) returns 0 at once; after
``shutdown_delay`` — and once every connection accepted since the request has finished its first
command, at most ``shutdown_hold_seconds`` (``nodeaccess.ShutdownHold``) — the node goes down:
every SSH connection cut, every process on the node killed (a command's, what it left behind, one
that left its process group too), new connections refused (the listener closed) — for
``reboot_duration``, then boots: a new boot id (``/proc/sys/kernel/random/boot_id``, systemd's
``%b``), every unit read afresh (no ``daemon-reload`` needed after a reboot), the flavour's trust
unit run (RHCOS's ``coreos-update-ca-trust.service``: the bundle extracted again), the enabled services
started with their units' environment, then sshd listens. The session that asked is sometimes cut
before its exit status reaches the client (``lost_exit_status_rate``, decided per reboot by a
generator seeded from ``seed`` and the node's name), as over real SSH. A killed command that has
not ended within ``nodeshell.REAP_TIMEOUT`` fails the reboot, naming its processes
(``reboot_failure``; the judge reads the node's checks as the lab's, inconclusive) rather than
leaving the node "stopping sshd" for good.

Not modelled yet (said, never guessed): interactive shells (a shell request without a command is
refused), SFTP, a node that stays off (``halt``, ``poweroff``), boot stages (sshd and the services
come back together). Its egress is ``nodeegress``'s; with ``kubelet`` settings the lab's kubelet
(``simulators.kubelet``) runs while the node's kubelet.service does, with that process's
environment, registering the Node and renewing its lease through the lab's network.
With ``user_data`` (a CAPI machine's bootstrap data) its first boot runs cloud-init's
``write_files`` and ``runcmd`` after the services started (``cloudinit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncssh

from proxyfleet.core.cancelling import stop_task, wait_until
from proxyfleet.core.looplag import sleep_running
from proxyfleet.simulators.boots import BootRecord, ExitStatusLoss, OutageWatch, WatchedOutages, utc_now
from proxyfleet.simulators.egress.records import EgressLog
from proxyfleet.simulators.kubelet import KubeletSettings, NodeIdentity, SimulatedKubelet
from proxyfleet.simulators.linux.cloudinit import BOOT_FINISHED, OUTPUT_LOG, CloudConfig, WriteFile, parse_user_data
from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel, boot_trust_extraction
from proxyfleet.simulators.linux.nodemounts import NodeMounts, process_summary
from proxyfleet.simulators.linux.noderoot import Flavour, create_root
from proxyfleet.simulators.linux.nodeshell import (
    ASKING,
    NodeCommand,
    NodeCommandStuck,
    install_commands,
    run_on_node,
    start_on_node,
    sync_proc,
)
from proxyfleet.simulators.linux.servicemanager import ServiceManager
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.nodeaccess import (
    SHUTDOWN_HOLD_SECONDS,
    AccessibleNode,
    NodeAccess,
    NodeSSHServer,
    ShutdownHold,
    listen_until_bound,
)

log = logging.getLogger(__name__)
NO_SHELL = "proxyfleet: interactive shells are not modelled on simulated Linux nodes; send a command\n"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# systemd's DefaultTimeoutStopSec: how long a shutdown waits for the command that asked for it to
# end (one that goes on running after asking is killed then); a deadline from the real default,
# reached only by a command that keeps running, never by a slow machine.
STOP_TIMEOUT = 90.0


@dataclass
class LinuxNodeConfig(NodeAccess):
    """One Linux node: who it is, where it listens, what it trusts to log in, what it runs."""

    flavour: Flavour
    system_cas_pem: bytes
    username: str = "core"
    clock: Callable[[], float] = time.monotonic  # the node's (called from worker threads too)
    shutdown_delay: float = 0.3  # from a reboot's request to sshd stopping (systemd stopping units)
    # ... and at most this long more for connections accepted since the request to finish their
    # first command (``ShutdownHold``)
    shutdown_hold_seconds: float = SHUTDOWN_HOLD_SECONDS
    reboot_duration: float = 1.0  # down: firmware, kernel, until sshd listens again (real: minutes)
    # How often the session that asked for a reboot is cut before its exit status reaches the client.
    lost_exit_status_rate: float = 0.0
    seed: int = 0
    network: LabNetwork | None = None  # where the node's egress resolves names
    kubelet: KubeletSettings | None = None  # None: no simulated kubelet talks to an API server
    # cloud-init user data for the first boot (a CAPI machine's bootstrap data): ``cloudinit``
    user_data: str | None = None
    # Keys among ``authorized_keys`` whose sessions are the lab's own observation (the judge's):
    # they hold no shutdown (``ShutdownHold``).
    observer_keys: list[asyncssh.SSHKey] = field(default_factory=list)


class _Server(NodeSSHServer):
    """Deny by default: only the node's user, with an authorized key."""

    def __init__(self, node: LinuxNode) -> None:
        super().__init__(node)
        self.node = node

    def accepts(self, username: str, key: asyncssh.SSHKey) -> bool:
        # Linux user names are case-sensitive
        accepted = username == self.node.config.username and key.public_data in self.node.authorized_key_data
        if accepted:
            self.observer = key.public_data in self.node.observer_key_data
        return accepted


class LinuxKubeletHost:
    """The kubelet's view of a Linux node: its name, the lab's clock, its boot, its egress log."""

    def __init__(self, node: LinuxNode) -> None:
        self.node = node
        self.identity: NodeIdentity = node.config.flavour.identity

    @property
    def name(self) -> str:
        return self.node.config.name

    @property
    def egress(self) -> EgressLog:
        return self.node.model.egress

    def now(self) -> dt.datetime:
        return utc_now()

    def boot_id(self) -> str:
        return self.node.boots[-1].boot_id if self.node.boots else ""


class LinuxNode(AccessibleNode, WatchedOutages):
    """A simulated Linux node on one event loop: ``await start()``, ``await stop()``."""

    config: LinuxNodeConfig

    def __init__(self, config: LinuxNodeConfig) -> None:
        self.config = config
        self.root = config.state_dir / "root"
        self.model = LinuxNodeModel(self.root, config.flavour, ServiceManager(self.root, hostname=config.name),
                                    config.clock, power=self._power_asked, network=config.network,
                                    address=config.address)
        self.mounts = NodeMounts(self.root)
        self.authorized_key_data = {key.public_data for key in config.authorized_keys}
        self.observer_key_data = {key.public_data for key in config.observer_keys}
        self.commands_run = 0
        self.boots: list[BootRecord] = []  # lab evidence: every power-on, with its id
        self.watch = OutageWatch(self)  # lab evidence: sshd's outages, and the lab's observers of their edges
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self.shutdown_hold = ShutdownHold()
        # False from the moment sshd stops: a connection the old listener accepted but had not yet
        # handed over is cut as it arrives (``_Server``).
        self.serving = False
        self.exit_statuses = ExitStatusLoss(config.seed, config.name)  # decided when a reboot is asked for
        # lab evidence: where an unfinished reboot is, since when (None: none under way), and how
        # one failed (the simulator's own fault: the node is left down)
        self.reboot_phase: tuple[str, dt.datetime] | None = None
        self.reboot_failure: str | None = None
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._running: set[NodeCommand] = set()
        self._sessions_ended: dict[NodeCommand, asyncio.Event] = {}  # set once its exit is sent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reboot: asyncio.Task[None] | None = None
        # The lab's kubelet runs while the node's kubelet.service does, with that process's
        # environment: a restart with a new proxy is a new kubelet (``_follow_kubelet``).
        self.kubelet = (SimulatedKubelet(LinuxKubeletHost(self), config.address, config.network, config.kubelet)
                        if config.kubelet is not None else None)
        self._kubelet_pid: int | None = None
        self.model.on_change = self._follow_kubelet
        # its bootstrap data, refused now if not understood (``cloudinit.UserDataError``)
        self.cloud_config: CloudConfig | None = (parse_user_data(config.user_data)
                                                 if config.user_data is not None else None)

    async def start(self) -> None:
        """Lay out the node (first start only), boot it, and listen."""
        self._loop = asyncio.get_running_loop()
        if not self.root.exists():
            await asyncio.to_thread(create_root, self.root, self.config.flavour, self.config.system_cas_pem,
                                    self.config.name)
        await asyncio.to_thread(self.mounts.prepare)
        await asyncio.to_thread(install_commands, self.model)
        await asyncio.to_thread(self.mounts.mount)
        # the lab reads and writes the node's files as its processes see them from now on
        self.model.use_root(self.mounts.view)
        await asyncio.to_thread(self._boot)
        self._follow_kubelet()
        await self._cloud_init()
        await self._listen()

    def _boot(self) -> None:
        """Power on: a boot record and its id, every unit read afresh, the enabled services started."""
        record = BootRecord.after(self.boots, utc_now())
        boot_id = self.model.root / BOOT_ID.lstrip("/")
        boot_id.parent.mkdir(parents=True, exist_ok=True)
        with self.model.lock:
            boot_id.write_text(f"{uuid.UUID(hex=record.boot_id)}\n")  # the kernel's spelling
            if self.config.flavour.trust_unit is not None:  # early in the boot, before any service
                boot_trust_extraction(self.model)
            self.model.systemd.boot(self.config.flavour.enabled, self.model.clock(), boot_id=record.boot_id)
            sync_proc(self.model)
        self.boots.append(record)

    async def _listen(self) -> None:
        self.serving = True
        self._acceptor = await asyncssh.listen(
            host=self.config.address, port=self.config.port, reuse_address=True,
            server_factory=lambda: _Server(self), server_host_keys=[self.config.host_key],
            process_factory=self._handle_process, encoding=None, allow_scp=False,
            login_timeout=30, keepalive_interval=0)
        # a port the system chose (0 asked) is the node's from now on: sshd comes back on it
        self.config.port = int(self._acceptor.sockets[0].getsockname()[1])

    @property
    def is_listening(self) -> bool:
        """Whether sshd is up (false while the node is down)."""
        return self._acceptor is not None

    @property
    def lost_exit_statuses(self) -> int:
        """Sessions that ended without their exit status (lab evidence)."""
        return self.exit_statuses.count

    @property
    def rebooting(self) -> bool:
        """Whether a reboot was asked for and has not finished (down, or about to go)."""
        return self._reboot is not None and not self._reboot.done()

    def _power_asked(self) -> None:
        """``systemctl reboot`` on the node (called from the worker thread that ran it)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the node is not running")
        loop.call_soon_threadsafe(self.request_reboot, ASKING.get())

    def request_reboot(self, asking: NodeCommand | None = None) -> None:
        """Reboot the node (on the loop), ``asking`` the command that asked for it; a second
        request while one runs is the same reboot."""
        if self.rebooting:
            return
        self.exit_statuses.decide(self.config.lost_exit_status_rate)
        self.shutdown_hold.begin()
        self._reboot = asyncio.get_running_loop().create_task(self._reboot_cycle(asking, utc_now()),
                                                              name=f"reboot {self.config.name}")
        self._reboot.add_done_callback(self._reboot_ended)

    def _reboot_ended(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ is not None else None
            self.reboot_failure = repr(exc) + (f" in {where.name} ({os.path.basename(where.filename)}:{where.lineno})"
                                               if where is not None else "")
            log.error("%s: the reboot failed, the node is left without sshd", self.config.name, exc_info=exc)

    def _phase(self, phase: str) -> None:
        """Where the reboot is (lab evidence: what a node that does not come back was doing)."""
        self.reboot_phase = (phase, utc_now())

    async def _reboot_cycle(self, asking: NodeCommand | None, requested_at: dt.datetime) -> None:
        self._phase("stopping units")
        # systemd stopping the units, on the host's own clock (as a Windows node's shutdown)
        await sleep_running(self.config.shutdown_delay)
        await self.shutdown_hold.wait(self.config.shutdown_hold_seconds)  # see ShutdownHold
        hang = self.watch.hangs()  # decided before anyone hears it go down
        ended = self._sessions_ended.get(asking) if asking is not None else None
        if ended is not None and not self.exit_statuses.lost:
            # whether the asker hears its exit status is the lab's choice (lost_exit_status_rate),
            # never how fast this machine ran the rest of its command
            self._phase("waiting for the asking command to end")
            await wait_until(ended, STOP_TIMEOUT)
        self._phase("stopping sshd and its sessions")
        await self._go_down()
        self.watch.went_down(utc_now(), requested_at)
        self.boots[-1].shutdown_at = utc_now()
        self._phase("powering off")
        await asyncio.to_thread(self._power_off)
        self._follow_kubelet()
        if hang:
            self._phase("hung (a fault the scenario set: it never boots again)")
            await asyncio.Event().wait()  # until the fleet stops it
        self._phase("off")
        await sleep_running(self.config.reboot_duration)  # firmware, kernel, initrd: on the host's clock too
        self._phase("booting")
        await asyncio.to_thread(self._boot)
        self._follow_kubelet()
        self._phase("starting sshd")
        await listen_until_bound(self._listen, self.config)
        self.watch.came_up(utc_now())
        self.reboot_phase = None

    def _power_off(self) -> None:
        with self.model.lock:
            self.model.systemd.shutdown()
            sync_proc(self.model)

    async def _go_down(self) -> None:
        """sshd stops: no new connections, every open one cut, every command killed. The
        connections are aborted before waiting for the listener, which waits for them."""
        self.serving = False
        acceptor, self._acceptor = self._acceptor, None
        if acceptor is not None:
            acceptor.close()
        for connection in list(self.connections):
            connection.abort()
        self.connections.clear()
        # Everything the node runs ends with sshd here, a process that left its command's group
        # too: one still holding a command's output would keep that command from ever ending.
        await asyncio.to_thread(self.mounts.end_processes)
        closing = await asyncio.gather(*(running.close() for running in list(self._running)),
                                       return_exceptions=True)
        if acceptor is not None:
            await acceptor.wait_closed()
        stuck = [str(outcome) for outcome in closing if isinstance(outcome, NodeCommandStuck)]
        for outcome in closing:
            if isinstance(outcome, BaseException) and not isinstance(outcome, NodeCommandStuck):
                raise outcome
        if stuck:
            left = await asyncio.to_thread(lambda: [process_summary(p) for p in self.mounts.processes()])
            raise NodeCommandStuck(f"{self.config.name}: sshd's sessions did not end: {'; '.join(stuck)}; "
                                   f"still running on the node: {', '.join(left) or 'nothing'}")

    async def go_offline(self) -> None:
        """Drop off the network (an outage, not a reboot): connections cut (sshd hangs up their
        sessions), new ones refused; the services and the kubelet keep running."""
        await self._go_down()
        self.watch.went_down(utc_now())

    async def come_online(self) -> None:
        """End an outage started by ``go_offline``."""
        await listen_until_bound(self._listen, self.config)
        self.watch.came_up(utc_now())

    async def replace_host_key(self) -> None:
        """A new SSH host key, as after a reinstall or a restored image: sshd restarts with it
        (open sessions are cut; no outage is recorded: the machine stays up)."""
        self.config.host_key = asyncssh.generate_private_key("ssh-ed25519")
        await self._go_down()
        await listen_until_bound(self._listen, self.config)

    async def stop(self) -> None:
        """Power off: stop listening, end every command still running (idempotent)."""
        reboot, self._reboot = self._reboot, None
        await stop_task(reboot)
        await self._go_down()
        await asyncio.to_thread(self._power_off)
        self._follow_kubelet()
        await asyncio.to_thread(self.mounts.unmount)
        self.model.use_root(self.root)

    async def _cloud_init(self) -> None:
        """The first boot's cloud-init: after the services started (not ordered before them, as on
        a real image), its files, then its commands; once per instance."""
        finished = self.model.root / BOOT_FINISHED.lstrip("/")
        if self.cloud_config is None or finished.exists():
            return
        await asyncio.to_thread(self._write_files, self.cloud_config.write_files)
        log_path = self.model.root / OUTPUT_LOG.lstrip("/")
        for command in self.cloud_config.runcmd:
            result = await run_on_node(self.model, self.mounts, command)
            with log_path.open("ab") as output:  # as cloud-init's: what ran, what it said, how it ended
                output.write(result.stdout + result.stderr)
                if result.code != 0:
                    output.write(f"runcmd: {command!r} exited {result.code}\n".encode())
        finished.parent.mkdir(parents=True, exist_ok=True)
        finished.write_text(f"{utc_now().isoformat()} - cloud-init finished\n")

    def _write_files(self, files: tuple[WriteFile, ...]) -> None:
        with self.model.lock:
            for entry in files:
                target = self.model.root / entry.path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("ab" if entry.append else "wb") as handle:
                    handle.write(entry.content)
                target.chmod(entry.mode)

    def _follow_kubelet(self) -> None:
        """Start the lab's kubelet when kubelet.service has a new process (with its environment),
        stop it when the service stopped (on the loop)."""
        if self.kubelet is None:
            return
        process = self.model.systemd.running.get("kubelet.service")
        pid = process.pid if process is not None else None
        if pid == self._kubelet_pid:
            return
        self._kubelet_pid = pid
        if process is None:
            self.kubelet.stop()
        else:
            self.kubelet.start(dict(process.environment))

    async def _handle_process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        connection = process.channel.get_connection()  # (the channel is gone once it closed)
        try:
            await self._serve_process(process)
        finally:
            self.shutdown_hold.release(connection)  # its first command is over

    async def _serve_process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        if process.command is None:
            process.stderr.write(NO_SHELL.encode())
            process.exit(1)
            return
        self.commands_run += 1
        running = await start_on_node(self.model, self.mounts, process.command)
        if not self.serving:  # sshd stopped while the command started: it ends with the rest
            await running.close()
            return
        self._running.add(running)
        self._sessions_ended[running] = ended = asyncio.Event()
        feeding = asyncio.create_task(_feed_stdin(process, running))
        try:
            await asyncio.gather(_forward(running.process.stdout, process.stdout),
                                 _forward(running.process.stderr, process.stderr))
            code = await running.finished()
            if self.exit_statuses.keeps(self.rebooting):
                process.exit(code)  # as sshd: the command's end ends the channel, whatever stdin still had
            else:
                process.close()  # the channel ends with no exit-status message
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
            del self._sessions_ended[running]
            ended.set()
            await self._session_ended(running)

    async def _session_ended(self, running: NodeCommand) -> None:
        """The session is over; what its command left running in the background lives on (as
        after a real ``nohup … &``) until it ends or the node goes down."""
        if running.process.returncode is not None and running.serving and self.serving:
            running.when_served(lambda: self._running.discard(running))
            return
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
