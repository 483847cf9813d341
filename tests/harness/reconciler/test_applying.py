"""The reconciler's node-side rhythm over real SSH: a pooled connection is reused while it matches
and replaced when it does not, and "back after a reboot" means a new boot time, never the old boot
still answering."""

from __future__ import annotations

import contextlib

import pytest

from proxyfleet.core.nodessh import HostKeyMismatch, NodeAddress, NodeError, RebootTimeout
from proxyfleet.harness.reconciler.applying import ConnectionPool, wait_for_new_boot
from proxyfleet.simulators.fleet import Fleet


def target(fleet: Fleet, index: int = 0) -> NodeAddress:
    node = fleet.nodes[index]
    return NodeAddress(node.address, node.port, node.username)


async def test_the_pool_reuses_a_matching_connection_and_replaces_others(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    pool = ConnectionPool()
    first = await pool.acquire(target(fleet), fleet.client_key, None, 5)
    pool.release(first)
    assert len(pool) == 1
    again = await pool.acquire(target(fleet), fleet.client_key, None, 5)
    assert again is first and again.reused
    pool.release(again)
    other = await pool.acquire(target(fleet, 1), fleet.client_key, None, 5)  # another node: its own connection
    assert other is not first
    pool.release(other)
    assert len(pool) == 2
    await pool.discard(target(fleet).address)
    assert len(pool) == 1 and not first.is_open
    await pool.close_all()


async def test_a_wrong_pinned_host_key_is_refused(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    wrong = fleet.nodes[1].host_key_openssh  # another node's key
    with pytest.raises(HostKeyMismatch):
        await ConnectionPool().acquire(target(fleet), fleet.client_key, wrong, 5)


async def test_only_a_new_boot_counts_as_back(fleet: Fleet) -> None:
    assert fleet.client_key is not None
    pool = ConnectionPool()
    connection = await pool.acquire(target(fleet), fleet.client_key, None, 5)
    old_boot = await connection.boot_time()
    with pytest.raises(RebootTimeout, match="did not come back with a new boot"):
        await wait_for_new_boot(target(fleet), fleet.client_key, connection.host_key, old_boot, limit=0.5, poll=0.05)
    with contextlib.suppress(NodeError):  # the reboot may cut the session before its exit status
        await connection.script("Restart-Computer -Force", limit=20)
    back, new_boot, attempts = await wait_for_new_boot(target(fleet), fleet.client_key, connection.host_key,
                                                       old_boot, limit=30, poll=0.05)
    try:
        assert new_boot != old_boot and attempts >= 1
    finally:
        await back.close()
        await connection.close()
