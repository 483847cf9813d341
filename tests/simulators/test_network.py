"""The lab table: loopback only, DNS-like failures, and no connection attempt for the unknown."""

from __future__ import annotations

import asyncio

import pytest

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
from proxyfleet.simulators.network import Endpoint, LabNetwork, NoRoute, NoSuchHost
from proxyfleet.simulators.windows.environment import EnvironmentBlock


def test_endpoints_must_be_loopback() -> None:
    for address in ("10.0.5.20", "192.168.1.1", "8.8.8.8", "::2"):
        with pytest.raises(ValueError, match="not a loopback address"):
            Endpoint(address, 443)
    assert Endpoint("127.30.0.1", 443).port == 443
    assert Endpoint("::1", 443).address == "::1"


def test_resolution_of_names_and_virtual_ips() -> None:
    network = LabNetwork()
    network.add("Quay.IO", 443, Endpoint("127.30.0.1", 40001), "internet")
    network.add("10.0.5.20", 443, Endpoint("127.40.0.1", 40002), "intranet")
    assert network.resolve("quay.io.", 443).endpoint.port == 40001  # case and trailing dot
    assert network.resolve("[10.0.5.20]", 443).kind == "intranet"
    with pytest.raises(NoSuchHost, match=r"lookup nothere\.example: no such host"):
        network.resolve("nothere.example", 443)
    with pytest.raises(NoRoute, match="connection refused"):
        network.resolve("quay.io", 80)
    with pytest.raises(NoRoute):
        network.resolve("10.9.9.9", 443)  # an address is never "looked up"; it is just unreachable
    copy = LabNetwork.from_json(network.to_json())
    assert [r.host for r in copy.routes()] == ["10.0.5.20", "quay.io"]


def test_allocation_stays_in_its_range() -> None:
    network = LabNetwork()
    assert [network.allocate("127.20.0.0/24") for _ in range(2)] == ["127.20.0.1", "127.20.0.2"]
    assert network.allocate("127.30.0.0/24") == "127.30.0.1"


async def test_unknown_destinations_fail_without_a_connection_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[tuple[object, ...]] = []

    async def recorder(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(asyncio, "open_connection", recorder)
    network = LabNetwork()
    session = EgressSession(network, "127.10.0.1", trust_context([]))
    for url, kind in (("https://nothere.example/", "dns"), ("https://10.0.5.20/", "refused"),
                      ("http://93.184.216.34/", "refused")):
        with pytest.raises(EgressError) as caught:
            await session.request("GET", url)
        assert caught.value.kind == kind
    with pytest.raises(EgressError) as caught:
        await session.request("GET", "https://quay.io/", proxy="http://proxy.unknown:3128")
    assert caught.value.kind == "proxy-dns"
    assert attempts == []


def test_windows_environment_names_are_case_insensitive_for_every_client() -> None:
    # On Windows, curl.exe asking for http_proxy gets HTTP_PROXY: there is only one variable.
    windows = EnvironmentBlock({"HTTP_PROXY": "http://p:3128"})
    linux = {"HTTP_PROXY": "http://p:3128"}
    assert CLIENTS["curl"].decide(windows, "http://quay.io/").decision == "proxy"
    assert CLIENTS["curl"].decide(linux, "http://quay.io/").decision == "direct"


def test_labs_side_by_side_take_their_own_addresses() -> None:
    assert LabNetwork().allocate("127.30.0.0/24") == "127.30.0.1"
    assert LabNetwork(3).allocate("127.30.0.0/24") == "127.30.3.1"
    with pytest.raises(ValueError):
        LabNetwork(256)


def test_the_hosts_file_lists_origins_reachable_on_their_own_ports() -> None:
    network = LabNetwork()
    network.add("quay.io", 443, Endpoint("127.30.0.1", 443), "internet")
    network.add("registry.corp.internal", 443, Endpoint("127.40.0.1", 443), "intranet")
    network.add("10.0.5.20", 443, Endpoint("127.40.0.1", 443), "intranet")  # an IP needs no name
    network.add("www.example.com", 443, Endpoint("127.30.0.2", 40123), "internet")  # not on its port
    network.add("proxy.corp.internal", 3128, Endpoint("127.20.0.1", 3128), "proxy")
    lines = network.hosts_file().splitlines()
    assert "127.30.0.1 quay.io" in lines and "127.40.0.1 registry.corp.internal" in lines
    assert not any(line.startswith("127.") and ("10.0.5.20" in line or "proxy" in line or "www." in line)
                   for line in lines)
    assert lines[-1] == "# not on their own ports (not bindable here): www.example.com"
