"""The judge's node probe over real SSH: one round trip reads a node's proxy variables, Root store,
boot, services and the reconciler's files; traffic runs the node's own clients; an unreachable node
is an error for observation and a failed result for traffic."""

from __future__ import annotations

import pytest

from proxyfleet.core.contract import EGRESS_SERVICES
from proxyfleet.core.nodessh import NodeError
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT


async def test_observe_reads_the_machine_state(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    node = fleet.nodes[0]
    environment = node.machine.registry.key(MACHINE_ENVIRONMENT)
    assert environment is not None
    environment.set("HTTPS_PROXY", "http://p.corp:3128", "REG_SZ")
    node.machine.filesystem.mkdir("C:\\k")
    node.machine.filesystem.write_bytes("C:\\k\\ca-bundle.crt", b"x")
    probe = NodeProbe(fleet.client_key, fleet.port)
    try:
        state = await probe.observe(node.address)
        assert state.environment == {"HTTP_PROXY": None, "HTTPS_PROXY": "http://p.corp:3128", "NO_PROXY": None}
        assert state.root == frozenset(node.machine.stores.machine_root.thumbprints())
        assert set(state.services) == set(EGRESS_SERVICES)
        assert "C:\\k\\ca-bundle.crt" in state.files
        assert state.boot is not None
    finally:
        await probe.close()


async def test_an_unreachable_node_is_an_error_to_observe_and_a_failed_pull(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    node = fleet.nodes[1]
    await node.stop()
    probe = NodeProbe(fleet.client_key, fleet.port)
    try:
        with pytest.raises(NodeError):
            await probe.observe(node.address)
        result = await probe.fetch(node.address, "https://quay.io/")
        assert not result.ok and result.output
    finally:
        await probe.close()


async def test_known_host_keys_are_strict_and_each_address_has_its_own_user(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    first, second = fleet.nodes[0], fleet.nodes[1]
    probe = NodeProbe(fleet.client_key, fleet.port, usernames={second.address: "nobody"},
                      host_keys={first.address: first.host_key_openssh, second.address: second.host_key_openssh},
                      strict_host_keys=True)
    try:
        assert (await probe.observe(first.address)).environment is not None  # listed, Administrator
        with pytest.raises(NodeError, match="refused the SSH key for user nobody"):
            await probe.observe(second.address)
        unlisted = NodeProbe(fleet.client_key, fleet.port, host_keys={}, strict_host_keys=True)
        with pytest.raises(NodeError, match="not in the known hosts file: not contacted"):
            await unlisted.observe(first.address)
        pull = await unlisted.pull(first.address, "quay.io/a:1")
        assert not pull.ok and "not in the known hosts file" in pull.output
        assert first.ssh_commands == 1  # only the listed, pinned probe ran anything
    finally:
        await probe.close()
