"""What the reconciler watches: the Proxy, the operator namespace's ConfigMaps and Secrets, and
Nodes by address, through one handler; synced once every informer has listed."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client

from proxyfleet.core.contract import OPERATOR_NAMESPACE
from proxyfleet.harness.lab import admin
from proxyfleet.harness.reconciler.reporting import REBOOT_PENDING
from proxyfleet.harness.reconciler.watching import ClusterWatch, owes_reboot
from tests.support import wait_until


async def test_changes_reach_the_handler_and_the_caches(api: client.ApiClient) -> None:
    heard: list[tuple[str, str, str]] = []

    def changed(kind: str, event: str, obj: dict[str, Any]) -> None:
        heard.append((kind, event, (obj.get("metadata") or {}).get("name", "*")))

    watch = ClusterWatch(api, OPERATOR_NAMESPACE, changed)
    watch.start()
    try:
        await asyncio.wait_for(watch.synced.wait(), 10)
        assert watch.proxy is not None  # OpenShift always has Proxy/cluster
        await admin.set_trusted_ca(api, "", name="elsewhere")  # another namespace: not watched
        await admin.set_instances(api, [("127.20.0.1", "Administrator")])
        node = {"metadata": {"name": "win-0001"},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.20.0.1"}]}}
        await asyncio.to_thread(client.CoreV1Api(api).create_node, node)
        await wait_until(lambda: watch.node_by_address("127.20.0.1") is not None)
        await wait_until(lambda: ("configmaps", "ADDED", "windows-instances") in heard)
        assert not any(name == "elsewhere" for _, _, name in heard)
        assert watch.node_by_address("127.20.0.1")["metadata"]["name"] == "win-0001"  # type: ignore[index]
        assert watch.relists == len(watch.informers)  # each listed once, none had to list again
    finally:
        watch.stop()


def test_a_node_owes_a_reboot_while_it_records_one_pending() -> None:
    addresses = {"addresses": [{"type": "InternalIP", "address": "127.10.0.3"}]}
    pending = {"metadata": {"name": "win-3", "annotations": {REBOOT_PENDING: "2026-11-26T10:00:00Z"}},
               "status": addresses}
    assert owes_reboot(pending) == ["127.10.0.3"]
    assert owes_reboot({"metadata": {"name": "win-3", "annotations": {}}, "status": addresses}) == []
    assert owes_reboot({"metadata": {"name": "win-3", "annotations": {REBOOT_PENDING: "x"}}, "status": {}}) == []
