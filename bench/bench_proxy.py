"""Proxy benchmark: mitmdump start-up time, and MITM HTTPS requests per second through it from many
node addresses (each a new CONNECT + TLS interception, as separate image pulls would be, and
with keep-alive inside one tunnel).

    python bench/bench_proxy.py --clients 200 --seconds 10 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import trustme

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.simulators.egress.client import EgressSession, trust_context
from proxyfleet.simulators.network import PROXY_NETWORK, LabNetwork
from proxyfleet.simulators.origins.catalog import INTERNET_SITE, start_origins
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings


async def load(network: LabNetwork, proxy_url: str, trust: object, clients: int, seconds: float,
               concurrency: int, keep_alive: bool) -> dict[str, float]:
    done = 0
    deadline = time.monotonic() + seconds

    async def worker(offset: int) -> None:
        nonlocal done
        index = offset
        while time.monotonic() < deadline:
            source = f"127.10.{(index % clients) // 250}.{(index % clients) % 250 + 1}"
            index += concurrency
            async with EgressSession(network, source, trust) as session:  # type: ignore[arg-type]
                for _ in range(5 if keep_alive else 1):
                    response = await session.request("GET", f"https://{INTERNET_SITE}/", proxy=proxy_url)
                    assert response.status == 200
                    done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = time.monotonic() - started
    return {"requests": done, "seconds": round(elapsed, 2), "per_second": round(done / elapsed, 1)}


async def run(clients: int, seconds: float, concurrency: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        network = LabNetwork()
        public_ca = trustme.CA()
        listen, egress = network.allocate(PROXY_NETWORK), network.allocate(PROXY_NETWORK)
        origins = await start_origins(network, public_ca, egress)
        proxy = ProxyServer(ProxySettings(Path(directory), network, public_ca.cert_pem.bytes(),
                                          listen_address=listen, egress_address=egress))
        await proxy.start()
        try:
            network.add("proxy.lab", proxy.port, proxy.endpoint, "proxy")
            proxy.publish_table()
            import ssl

            trust = trust_context([ssl.PEM_cert_to_DER_cert(proxy.mitm_ca_pem.decode())])
            url = f"http://proxy.lab:{proxy.port}"
            fresh = await load(network, url, trust, clients, seconds, concurrency, keep_alive=False)
            reused = await load(network, url, trust, clients, seconds, concurrency, keep_alive=True)
            first_start = proxy.started_seconds
            # A lab's later starts (a scenario's "proxy down" and back, the next lab in this
            # process): by fork from a fork server that has imported mitmproxy already
            # (PROXYFLEET_MITMDUMP_FORK=0: a fresh interpreter each time, as the first).
            await proxy.stop()
            await proxy.start()
        finally:
            await proxy.stop()
            await origins.stop()
        return {"proxy_start_seconds": round(first_start or 0, 2),
                "proxy_next_start_seconds": round(proxy.started_seconds or 0, 2), "client_addresses": clients,
                "concurrency": concurrency, "new_tunnel_per_request": fresh,
                "five_requests_per_tunnel": reused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.clients, args.seconds, args.concurrency)), indent=2))


if __name__ == "__main__":
    main()
