from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme
from kubernetes import client, config

from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings


@pytest.fixture
async def control_plane(tmp_path: Path) -> AsyncIterator[ControlPlane]:
    ca = trustme.CA()
    plane = ControlPlane(ControlPlaneSettings(tmp_path / "cluster", ca.cert_pem.bytes().decode(),
                                              bookmark_interval=0.2, node_monitor_period=0.2))
    await plane.start()
    try:
        yield plane
    finally:
        await plane.stop()


@pytest.fixture
def api(control_plane: ControlPlane) -> client.ApiClient:
    api_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    yield api_client
    api_client.close()
