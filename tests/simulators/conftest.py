"""The traffic lab, one per test module (its event loop is the module's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.fleet import Fleet, FleetSettings
from proxyfleet.simulators.network import PROXY_NETWORK, LabNetwork
from proxyfleet.simulators.origins.catalog import start_origins
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings
from tests.simulators.traffic import PROXY_NAME, TrafficLab


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TrafficLab]:
    state = tmp_path_factory.mktemp("traffic")
    network = LabNetwork()
    public_ca = trustme.CA(organization_name="proxyfleet public roots")
    listen, egress = network.allocate(PROXY_NETWORK), network.allocate(PROXY_NETWORK)
    origins = await start_origins(network, public_ca, egress)
    proxy = ProxyServer(ProxySettings(state / "proxy", network, public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=egress))
    fleet = Fleet(FleetSettings(nodes=4, state_dir=state / "fleet", lab_network=network,
                                public_roots=[Certificate.from_pem(public_ca.cert_pem.bytes())]))
    try:
        await proxy.start()
        network.add(PROXY_NAME, proxy.port, proxy.endpoint, "proxy")
        proxy.publish_table()
        await fleet.start()
        yield TrafficLab(network, public_ca, origins, proxy, fleet)
    finally:
        await fleet.stop()
        await proxy.stop()
        await origins.stop()
