"""The traffic lab, one per test module (its event loop is the module's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.fleet import Fleet, FleetSettings
from tests.simulators.traffic import TrafficLab, egress_lab


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TrafficLab]:
    state = tmp_path_factory.mktemp("traffic")
    async with egress_lab(state) as egress:
        fleet = Fleet(FleetSettings(nodes=4, state_dir=state / "fleet", lab_network=egress.network,
                                    public_roots=[Certificate.from_pem(egress.public_ca.cert_pem.bytes())]))
        try:
            await fleet.start()
            yield TrafficLab(egress.network, egress.public_ca, egress.origins, egress.proxy, fleet)
        finally:
            await fleet.stop()
