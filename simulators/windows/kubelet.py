"""A Windows node as its kubelet (``simulators.kubelet``) sees it: the machine's name, clock, boot
and egress log, and what a Windows Server 2022 worker registers (OpenShift's labels for it)."""

from __future__ import annotations

import datetime as dt

from proxyfleet.simulators.egress.records import EgressLog
from proxyfleet.simulators.kubelet import NodeIdentity
from proxyfleet.simulators.windows.machine import WindowsMachine

# What WMCO's nodes carry besides the kubelet's own labels.
WINDOWS_LABELS = {"node.kubernetes.io/windows-build": "10.0.20348", "node.openshift.io/os_id": "Windows",
                  "node-role.kubernetes.io/worker": ""}


class WindowsKubeletHost:
    """The kubelet's view of a Windows machine."""

    def __init__(self, machine: WindowsMachine) -> None:
        self.machine = machine
        self.identity = NodeIdentity("windows", machine.settings.os_caption, "10.0.20348.2031",
                                     "containerd://1.7.0", WINDOWS_LABELS)

    @property
    def name(self) -> str:
        return self.machine.settings.hostname

    @property
    def egress(self) -> EgressLog:
        return self.machine.egress

    def now(self) -> dt.datetime:
        return self.machine.now()

    def boot_id(self) -> str:
        boot = self.machine.current_boot
        return boot.boot_id if boot is not None else ""
