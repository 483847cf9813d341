"""A small lab for traffic tests: real mitmdump, the standard origins behind their firewall, four
nodes; and what those tests do to a node (trust the MITM CA, give containerd a proxy)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import trustme

from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.network import PROXY_NETWORK, LabNetwork
from proxyfleet.simulators.origins.catalog import Origins, start_origins
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings
from proxyfleet.simulators.windows.node import WindowsNode
from tests.support import run_powershell

PROXY_NAME = "proxy.corp.internal"
CONTAINERD_KEY = r"HKLM:\SYSTEM\CurrentControlSet\Services\containerd"


@dataclass
class Egress:
    """Where a node's traffic goes: the lab's network, the standard origins behind their firewall
    and a real mitmdump, named ``PROXY_NAME`` in the table."""

    network: LabNetwork
    public_ca: trustme.CA
    origins: Origins
    proxy: ProxyServer


@contextlib.asynccontextmanager
async def egress_lab(state: Path) -> AsyncIterator[Egress]:
    """Start the origins and the proxy (stopped on leaving)."""
    network = LabNetwork()
    public_ca = trustme.CA(organization_name="proxyfleet public roots")
    listen, egress = network.allocate(PROXY_NETWORK), network.allocate(PROXY_NETWORK)
    origins = await start_origins(network, public_ca, egress)
    proxy = ProxyServer(ProxySettings(state / "proxy", network, public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=egress))
    try:
        await proxy.start()
        network.add(PROXY_NAME, proxy.port, proxy.endpoint, "proxy")
        proxy.publish_table()
        yield Egress(network, public_ca, origins, proxy)
    finally:
        await proxy.stop()
        await origins.stop()


@dataclass
class TrafficLab:
    network: LabNetwork
    public_ca: trustme.CA
    origins: Origins
    proxy: ProxyServer
    fleet: Fleet

    @property
    def proxy_url(self) -> str:
        return f"http://{PROXY_NAME}:{self.proxy.port}"


async def trust_the_mitm_ca(lab: TrafficLab, node: WindowsNode) -> None:
    """Import the proxy's MITM CA into the node's Root store (idempotent).

    Each test that needs it does this itself: xdist may run any test of this module first, on a fresh lab."""
    node.machine.filesystem.write_bytes(r"C:\k\mitm.crt", lab.proxy.mitm_ca_pem)
    result = await run_powershell(lab.fleet, node, r"Import-Certificate C:\k\mitm.crt -CertStoreLocation Cert:\LocalMachine\Root")
    assert result.exit_status == 0, result.stderr


async def configure_containerd(lab: TrafficLab, node: WindowsNode, *, proxy: str | None,
                               no_proxy: str = "", trust_mitm: bool) -> None:
    """Give containerd a proxy through its own Environment value and restart it."""
    if trust_mitm:
        await trust_the_mitm_ca(lab, node)
    entries = [f"HTTPS_PROXY={proxy}", f"HTTP_PROXY={proxy}"] if proxy else []
    if no_proxy:
        entries.append(f"NO_PROXY={no_proxy}")
    values = ",".join(f"'{e}'" for e in entries) or "@()"
    result = await run_powershell(lab.fleet, node, f"New-ItemProperty -Path {CONTAINERD_KEY} -Name Environment "
                                           f"-PropertyType MultiString -Value @({values}) -Force | Out-Null;"
                                           "Restart-Service containerd -Force")
    assert result.exit_status == 0, result.stderr


def flows_from(lab: TrafficLab, node: WindowsNode, host: str) -> list[dict[str, object]]:
    return [f for f in lab.proxy.flows() if f["client"] == node.address and f["host"] == host]
