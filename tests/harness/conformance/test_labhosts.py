"""The lab's view of a node of either kind (``LabHost``), read from a real mixed lab: the same
questions answered from a Windows node's and a Linux node's own records."""

from __future__ import annotations

from proxyfleet.core.contract import EGRESS_SERVICES
from proxyfleet.harness.conformance.labhosts import LabHost
from proxyfleet.harness.conformance.linuxprobe import LinuxNodeState
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.harness.lab import Lab, LabSettings


async def test_either_kind_answers_from_its_own_records() -> None:
    async with Lab(LabSettings(nodes=1, linux_nodes=1, proxy=False)) as lab:
        assert lab.fleet.client_key is not None
        windows, linux = (LabHost.of(n) for n in lab.fleet.every_node)
        assert (windows.kind, linux.kind) == ("windows", "linux")
        assert linux.address == lab.fleet.linux_nodes[0].config.address and linux.name.startswith("linux-")
        assert windows.listening and linux.listening and len(linux.boots) == 1 and not linux.outages
        # each kind's egress services, running with the environment they booted with (no proxy)
        assert set(windows.service_environments()) == set(EGRESS_SERVICES)
        environments = linux.service_environments()
        assert set(environments) == {"crio.service", "kubelet.service"}
        assert all(env is not None and "HTTP_PROXY" not in env for env in environments.values())
        # what each unit's files give it at the next boot: no proxy variable; a Windows node has none
        assert linux.boot_environments() == {"crio.service": {}, "kubelet.service": {}}
        assert windows.boot_environments() == {}
        assert linux.root_removals == []  # a Linux node's bundle is written whole: no removal history
        # a look is a command: the activity the judge keys its looks by grows with it
        before, commands = linux.activity(), linux.commands
        probe = NodeProbe(lab.fleet.client_key, lab.fleet.port, linux=[linux.address],
                          usernames={linux.address: "core"})
        try:
            state = await probe.look(linux.address)
            await probe.fetch(linux.address, "http://registry.corp.internal/v2/")  # its route is not the point
        finally:
            await probe.close()
        assert isinstance(state, LinuxNodeState) and state.os_id == "rhcos"
        assert linux.commands == commands + 2 and linux.activity() > before
        # the fetch left from the node itself: its curl's record is in the node's egress log
        assert any(r.client == "curl" for r in linux.egress.records), linux.egress.records
