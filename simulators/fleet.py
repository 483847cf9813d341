"""A fleet of simulated nodes in one process, on one event loop: Windows nodes and, beside them,
Linux nodes of one flavour (``linux_nodes``; an OpenShift cluster's RHCOS workers, or a CAPI
cluster's Debian ones).

Every node listens on its own loopback address (``127.10.x.y`` by default: Windows nodes from the
bottom of the range, Linux nodes from its middle) and the same port, with its own ed25519 host key;
one client key is authorized on all of them. ``fleet.json`` in the state directory tells a real SSH
client how to reach each node, and which kind it is.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import logging
import os
import random
import socket
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import asyncssh

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.secretfiles import write_private
from proxyfleet.simulators.kubelet import KubeletSettings
from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import FlavourError, flavour_named
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.nodeaccess import SHUTDOWN_HOLD_SECONDS
from proxyfleet.simulators.pki import public_roots
from proxyfleet.simulators.windows.node import NodeConfig, WindowsNode
from proxyfleet.simulators.windows.powershell.commands import CommandTable
from proxyfleet.simulators.windows.trust import windows_builtin_roots

DEFAULT_NETWORK = "127.10.0.0/16"
DEFAULT_SHELLS = ("cmd", "powershell", "mixed")


class FleetError(RuntimeError):
    reason = "FleetError"


@dataclass
class FleetSettings:
    nodes: int
    state_dir: Path
    network: str = DEFAULT_NETWORK
    port: int = 0
    username: str = "Administrator"
    name_prefix: str = "win"
    shutdown_delay: float = 0.3
    shutdown_hold_seconds: float = SHUTDOWN_HOLD_SECONDS  # then at most this for new connections (ShutdownHold)
    reboot_duration: float = 1.0
    restart_reads_current_environment: bool = False
    # OpenSSH's default shell on every node: "cmd" (Windows' own default), "powershell" (the
    # DefaultShell registry value set), or "mixed" (alternating, as fleets built over time are).
    default_shell: str = "cmd"
    service_stage_seconds: float = 0.25  # after a reboot, between boot stages (see NodeConfig)
    service_hold_seconds: float = 2.0  # the stages wait at most this long for a look (see NodeConfig)
    lost_exit_status_rate: float = 0.0  # Restart-Computer sessions cut before their exit status
    seed: int = 0  # seeds each node's dice (lost exit statuses)
    # The out-of-the-box Root store of every node (a real Windows Server's dozens of roots).
    public_roots: list[Certificate] = field(default_factory=lambda: list(windows_builtin_roots()))
    lab_network: LabNetwork | None = None  # where nodes' egress resolves names
    kubelet: KubeletSettings | None = None  # nodes' kubelets register with this API server
    linux_nodes: int = 0  # Linux nodes beside the Windows ones
    # A Linux node's distribution trust store out of the box: Mozilla's roots, as Debian and RHCOS
    # ship them (a lab adds its public CA, which plays the public web PKI).
    linux_public_roots: list[Certificate] = field(default_factory=lambda: list(public_roots()))
    linux_flavour: str = "rhcos"  # "rhcos" (OpenShift's workers) or "debian" (a CAPI cluster's)
    # Each Linux node's cloud-init user data for its first boot (CAPI machines' bootstrap data)
    linux_user_data: str | None = None
    linux_name_prefix: str = "linux"

    def __post_init__(self) -> None:
        network = ipaddress.ip_network(self.network)
        if not network.is_loopback:
            raise FleetError(f"the node network {self.network} is not loopback; the lab never "
                             "listens outside 127.0.0.0/8")
        half = self.linux_offset(network)
        if self.nodes < 0 or self.nodes > half - 1:
            raise FleetError(f"{self.nodes} Windows nodes do not fit in {self.network} (at most {half - 1})")
        if self.linux_nodes < 0 or self.linux_nodes > network.num_addresses - half - 2:
            raise FleetError(f"{self.linux_nodes} Linux nodes do not fit in {self.network}")
        try:
            flavour_named(self.linux_flavour)
        except FlavourError as exc:
            raise FleetError(str(exc)) from None
        if self.linux_nodes:
            cannot = host_cannot_mount()
            if cannot is not None:
                raise FleetError(f"this machine cannot run Linux nodes: {cannot}")
        if self.default_shell not in DEFAULT_SHELLS:
            raise FleetError(f"unknown default shell {self.default_shell!r}; choose one of "
                             + ", ".join(DEFAULT_SHELLS))

    @staticmethod
    def linux_offset(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
        """Where Linux nodes' addresses start in the range: its middle (Windows nodes from the
        bottom), so both kinds grow without meeting."""
        return network.num_addresses // 2

    def shell_of(self, index: int) -> str:
        """The default shell of the ``index``-th node."""
        if self.default_shell == "mixed":
            return "cmd" if index % 2 == 0 else "powershell"
        return self.default_shell


def _load_or_create_key(path: Path) -> asyncssh.SSHKey:
    if path.exists():
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key("ssh-ed25519")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.export_private_key("openssh"))
    path.with_suffix(".pub").write_bytes(key.export_public_key("openssh"))
    return key


# Linux's default ephemeral range, where /proc does not say (IANA's is 49152-65535).
DEFAULT_EPHEMERAL = (32768, 60999)
LOWEST_PORT = 20000  # below: ports other services on the machine are known by


def ephemeral_ports(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def _free_port(address: str, chooser: random.Random | None = None) -> int:
    """A free port for every node's sshd, outside the ephemeral range, as sshd's 22 is. The nodes'
    own outgoing connections (kubelet, pulls) leave from their addresses with ephemeral ports: one
    could hold the SSH port of a node while it reboots, and its sshd could not listen again."""
    low, high = ephemeral_ports()
    candidates = [p for p in range(LOWEST_PORT, 65536) if not low <= p <= high]
    chooser = chooser or random.Random()
    for port in chooser.sample(candidates, min(64, len(candidates))):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((address, port))
            except OSError:
                continue
            return port
    raise FleetError(f"no free port outside the ephemeral range {low}-{high} on {address}")


class Fleet:
    """Start, grow, shrink and stop a set of nodes; write ``fleet.json``."""

    def __init__(self, settings: FleetSettings, commands: CommandTable | None = None) -> None:
        self.settings = settings
        self.commands = commands
        self.state_dir = settings.state_dir
        self.nodes: list[WindowsNode] = []
        self.linux_nodes: list[LinuxNode] = []
        self.port = settings.port
        self.client_key_path = self.state_dir / "id_ed25519"
        self.client_key: asyncssh.SSHKey | None = None
        # The lab's own key, for the judge's probes: authorised on every node, and a Windows node
        # tells its sessions from a reconciler's (its held boot stages wait for a reconciler's look).
        self.observer_key_path = self.state_dir / "id_ed25519_observer"
        self.observer_key: asyncssh.SSHKey | None = None
        self._network = ipaddress.ip_network(settings.network)
        self._next_index = 0

    async def __aenter__(self) -> Fleet:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def _address(self, index: int) -> str:
        return str(self._network.network_address + index + 1)

    def _node(self, index: int) -> WindowsNode:
        name = f"{self.settings.name_prefix}-{index + 1:04d}"
        node_dir = self.state_dir / "nodes" / name
        assert self.client_key is not None and self.observer_key is not None
        config = NodeConfig(
            name=name, address=self._address(index), port=self.port, state_dir=node_dir,
            host_key=_load_or_create_key(node_dir / "ssh_host_ed25519_key"),
            authorized_keys=[self.client_key, self.observer_key], observer_keys=[self.observer_key],
            username=self.settings.username,
            shutdown_delay=self.settings.shutdown_delay,
            shutdown_hold_seconds=self.settings.shutdown_hold_seconds,
            reboot_duration=self.settings.reboot_duration,
            restart_reads_current_environment=self.settings.restart_reads_current_environment,
            default_shell=self.settings.shell_of(index),
            service_stage_seconds=self.settings.service_stage_seconds,
            service_hold_seconds=self.settings.service_hold_seconds,
            lost_exit_status_rate=self.settings.lost_exit_status_rate, seed=self.settings.seed,
            public_roots=list(self.settings.public_roots), network=self.settings.lab_network,
            kubelet=self.settings.kubelet)
        return WindowsNode(config, self.commands)

    def _linux_node(self, index: int) -> LinuxNode:
        name = f"{self.settings.linux_name_prefix}-{index + 1:04d}"
        node_dir = self.state_dir / "nodes" / name
        assert self.client_key is not None and self.observer_key is not None
        address = str(self._network.network_address + self.settings.linux_offset(self._network) + index + 1)
        system_cas = "".join(c.pem() for c in self.settings.linux_public_roots).encode()
        config = LinuxNodeConfig(
            name=name, address=address, port=self.port, state_dir=node_dir,
            host_key=_load_or_create_key(node_dir / "ssh_host_ed25519_key"),
            authorized_keys=[self.client_key, self.observer_key], observer_keys=[self.observer_key],
            flavour=flavour_named(self.settings.linux_flavour), system_cas_pem=system_cas,
            shutdown_delay=self.settings.shutdown_delay, shutdown_hold_seconds=self.settings.shutdown_hold_seconds,
            reboot_duration=self.settings.reboot_duration,
            lost_exit_status_rate=self.settings.lost_exit_status_rate, seed=self.settings.seed,
            network=self.settings.lab_network, kubelet=self.settings.kubelet, user_data=self.settings.linux_user_data)
        return LinuxNode(config)

    @property
    def every_node(self) -> list[WindowsNode | LinuxNode]:
        """Every node of the fleet, Windows first."""
        return [*self.nodes, *self.linux_nodes]

    async def start(self) -> None:
        # asyncssh's server logs each exec request's command line at INFO: not in the lab's logs.
        logging.getLogger("asyncssh").setLevel(logging.WARNING)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.client_key = _load_or_create_key(self.client_key_path)
        self.observer_key = _load_or_create_key(self.observer_key_path)
        for attempt in range(5):
            if self.settings.port == 0:
                self.port = _free_port(self._address(0))
            nodes = [self._node(i) for i in range(self.settings.nodes)]
            linux = [self._linux_node(i) for i in range(self.settings.linux_nodes)]
            every: list[WindowsNode | LinuxNode] = [*nodes, *linux]
            try:
                await asyncio.gather(*(node.start() for node in every))
            except OSError as exc:
                await asyncio.gather(*(node.stop() for node in every), return_exceptions=True)
                if exc.errno != errno.EADDRINUSE or self.settings.port != 0 or attempt == 4:
                    raise FleetError(f"cannot listen on port {self.port}: {exc}") from exc
                continue
            self.nodes = nodes
            self.linux_nodes = linux
            self._next_index = len(nodes)
            break
        self.write_manifest()

    async def add_node(self) -> WindowsNode:
        """Bring one more node up (a new instance joining)."""
        node = self._node(self._next_index)
        self._next_index += 1
        await node.start()
        self.nodes.append(node)
        self.write_manifest()
        return node

    async def remove_node(self, name: str) -> None:
        node = self.node(name)
        await node.stop()
        self.nodes.remove(node)
        self.write_manifest()

    async def stop(self) -> None:
        await asyncio.gather(*(node.stop() for node in self.every_node), return_exceptions=True)

    def node(self, name_or_address: str) -> WindowsNode:
        for node in self.nodes:
            if name_or_address in (node.name, node.address):
                return node
        raise FleetError(f"no node named {name_or_address}")

    def manifest(self) -> dict[str, object]:
        windows = [{"name": n.name, "address": n.address, "port": n.port, "kind": "windows",
                    "username": n.username, "host_key": n.host_key_openssh,
                    "default_shell": n.config.default_shell} for n in self.nodes]
        linux = [{"name": n.config.name, "address": n.config.address, "port": n.port, "kind": "linux",
                  "flavour": n.config.flavour.name, "username": n.config.username,
                  "host_key": n.host_key_openssh, "default_shell": "sh"} for n in self.linux_nodes]
        return {"private_key": str(self.client_key_path.resolve()), "nodes": [*windows, *linux]}

    def write_manifest(self) -> Path:
        """fleet.json, written whole and last: once a reader sees it, the files it names (known_hosts,
        windows-instances) are there too, and it never reads half of it."""
        path = self.state_dir / "fleet.json"
        known_hosts = "".join(f"[{n.address}]:{n.port} {n.host_key_openssh}\n" for n in self.nodes) + "".join(
            f"[{n.config.address}]:{n.port} {n.host_key_openssh}\n" for n in self.linux_nodes)
        write_private(self.state_dir / "known_hosts", known_hosts)
        # `kubectl create configmap windows-instances --from-file=DIR`: one key per address, WMCO's BYOH
        # format (an env file cannot carry keys that start with a digit)
        instances = self.state_dir / "windows-instances"
        instances.mkdir(exist_ok=True)
        wanted = {n.address: f"username={n.username}" for n in self.nodes}
        for stale in instances.iterdir():
            if stale.name not in wanted:
                stale.unlink()
        for address, value in wanted.items():
            (instances / address).write_text(value)
        return write_private(path, json.dumps(self.manifest(), indent=2) + "\n")

    def ssh_command(self, node: WindowsNode | LinuxNode) -> list[str]:
        """An OpenSSH command line that reaches ``node`` with host-key checking on."""
        user, address = ((node.username, node.address) if isinstance(node, WindowsNode)
                         else (node.config.username, node.config.address))
        return ["ssh", "-i", str(self.client_key_path), "-p", str(node.port),
                "-o", f"UserKnownHostsFile={self.state_dir / 'known_hosts'}",
                "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
                "-o", "BatchMode=yes", f"{user}@{address}"]

