"""What the reconciler writes to the cluster about a node's reboot: its cordon is recorded with who
owned it, and releasing undoes only the reconciler's own cordon, also when resuming without a
record (the pass that lost an administrator's cordon at 100 nodes)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from proxyfleet.core.contract import OPERATOR_NAMESPACE
from proxyfleet.harness.reconciler.reporting import CORDONED_BY, ClusterWriter
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.controlplane.resources import NODES
from tests.support import workload_plane

NODE_NAMES = ("win-0001", "win-0002")


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[ControlPlane]:
    async with workload_plane(tmp_path / "cluster", NODE_NAMES) as control_plane:
        yield control_plane


@pytest.fixture
def writer(plane: ControlPlane) -> Iterator[ClusterWriter]:
    api_client = config.new_client_from_config(config_file=str(plane.kubeconfig_path))
    yield ClusterWriter(api_client, OPERATOR_NAMESPACE)
    api_client.close()


def node(plane: ControlPlane, name: str) -> dict[str, Any]:
    return plane.store.get(NODES, "", name)


def cordoned(plane: ControlPlane, name: str) -> bool:
    return bool(node(plane, name)["spec"].get("unschedulable"))


async def test_the_reconcilers_own_cordon_is_recorded_and_released(plane: ControlPlane, writer: ClusterWriter) -> None:
    assert await writer.cordon_for_reboot("win-0001") == "reconciler"
    assert cordoned(plane, "win-0001") and node(plane, "win-0001")["metadata"]["annotations"][CORDONED_BY] == "reconciler"
    await writer.release_cordon("win-0001")  # no record in memory: the annotation says whose it was
    assert not cordoned(plane, "win-0001")
    assert CORDONED_BY not in (node(plane, "win-0001")["metadata"].get("annotations") or {})


async def test_an_administrators_cordon_survives_release_also_without_a_record(plane: ControlPlane,
                                                                                writer: ClusterWriter) -> None:
    await writer.cordon("win-0002", True)  # the administrator's
    by = await writer.cordon_for_reboot("win-0002")
    assert by == "administrator"
    await writer.release_cordon("win-0002", by)
    assert cordoned(plane, "win-0002")
    # A second pass resuming from a stale cache releases again, with no record left: still cordoned.
    await writer.release_cordon("win-0002")
    assert cordoned(plane, "win-0002")
    assert CORDONED_BY not in (node(plane, "win-0002")["metadata"].get("annotations") or {})


