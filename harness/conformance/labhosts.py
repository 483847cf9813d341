"""One simulated node of the lab as its evidence source reads it, whichever its kind: where its
egress is recorded, how many boots, outages and commands it had, what its egress services'
processes hold, which Root certificates were taken out of its store — the one place that knows
how a Windows node and a Linux node keep each of these (``LabHost.of``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from proxyfleet.core.contract import EGRESS_SERVICES, PROXY_VARIABLES
from proxyfleet.simulators.egress.records import EgressLog
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.windows.node import WindowsNode

if TYPE_CHECKING:
    from proxyfleet.simulators.boots import BootRecord, Outage


@dataclass(frozen=True)
class LabHost:
    """A read-only view of one lab node (``of``): no check reads a simulator but through this."""

    node: WindowsNode | LinuxNode

    @classmethod
    def of(cls, node: WindowsNode | LinuxNode) -> LabHost:
        return cls(node)

    @property
    def address(self) -> str:
        return self.node.address

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def kind(self) -> str:
        return "linux" if isinstance(self.node, LinuxNode) else "windows"

    @property
    def listening(self) -> bool:
        return self.node.is_listening

    @property
    def boots(self) -> list[BootRecord]:
        return self.node.boots

    @property
    def outages(self) -> list[Outage]:
        return self.node.outages

    @property
    def commands(self) -> int:
        """SSH commands run on the node so far."""
        return self.node.commands_run if isinstance(self.node, LinuxNode) else self.node.ssh_commands

    @property
    def egress(self) -> EgressLog:
        """Every request the node's clients made (the kubelet's, the runtime's, curl's)."""
        return self.node.model.egress if isinstance(self.node, LinuxNode) else self.node.machine.egress

    @property
    def root_removals(self) -> list[str]:
        """Thumbprints taken out of the node's Root store, oldest first. A Linux node keeps no such
        history (its extracted bundle is written whole): none, and its certificates are judged
        by the bundle each look reads."""
        return [] if isinstance(self.node, LinuxNode) else self.node.machine.stores.machine_root.removed

    def lab_fault(self) -> str:
        """How the lab itself failed the node ('' where it did not): the simulator failed a Linux
        node's reboot (``LinuxNode.reboot_failure``), leaving it down — never the reconciler's doing."""
        failure = self.node.reboot_failure if isinstance(self.node, LinuxNode) else None
        return f"the lab failed the node's reboot: {failure}" if failure is not None else ""

    def down_note(self) -> str:
        """What the lab knows of why the node does not answer ('' where nothing): a Linux node's
        unfinished reboot, where it is and since when, or how the simulator failed it."""
        if not isinstance(self.node, LinuxNode) or self.node.is_listening:
            return ""
        if fault := self.lab_fault():
            return fault
        if self.node.reboot_phase is not None:
            phase, since = self.node.reboot_phase
            return f"its reboot has been {phase} since {since.isoformat(timespec='milliseconds')}"
        return ""

    def activity(self) -> int:
        """A count that grows with everything that can change what a look at the node shows: its
        commands (the probe's own among them) and boots, and on Windows its service starts (which
        a boot's stages make after sshd is up). A Linux node's services start in its boot or by a
        command, both counted."""
        if isinstance(self.node, LinuxNode):
            return self.node.commands_run + len(self.node.boots)
        return (self.node.ssh_commands + len(self.node.boots)
                + sum(s.start_count for s in self.node.machine.services.values()))

    def boot_environments(self) -> dict[str, dict[str, str] | None]:
        """A Linux node's egress units' proxy variables as their files alone give them — what the
        next boot would start each with, without the manager's runtime environment (``systemctl
        set-environment``) — None: it would not start. Empty for a Windows node."""
        if not isinstance(self.node, LinuxNode):
            return {}
        systemd = self.node.model.systemd
        found = {u: systemd.environment_at_boot(u) for u in self.node.model.flavour.services}
        return {u: None if env is None else {k: v for k, v in env.items() if k.upper() in PROXY_VARIABLES}
                for u, env in found.items()}

    def service_environments(self) -> dict[str, dict[str, str] | None]:
        """Each egress service's running process' environment (None: not running): on Windows the
        operator's two services, on Linux the node's runtime and kubelet units."""
        if isinstance(self.node, LinuxNode):
            running = self.node.model.systemd.running
            return {u: dict(running[u].environment) if u in running else None
                    for u in self.node.model.flavour.services}
        return {s: self.node.process_environment(s) for s in EGRESS_SERVICES}
