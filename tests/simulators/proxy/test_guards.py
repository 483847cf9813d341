"""The run's proxy serves only the instances and reaches nothing of its own machine: the checks as
pure functions over the kernel's tables, and the allow-list addon."""

from __future__ import annotations

import ipaddress

from mitmproxy.test import taddons, tflow

from proxyfleet.simulators.proxy.guards import (
    ClientAllowList,
    client_allowed,
    local_addresses,
    parse_networks,
    read_local_addresses,
    refusal,
)

FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.0.0.0/24 2 0 2
        |-- 10.0.0.0
           /24 link UNICAST
        |-- 10.0.0.5
           /32 host LOCAL
        |-- 10.0.0.9
           /32 host LOCAL
  +-- 127.0.0.0/8 2 0 2
     |-- 127.0.0.1
        /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 10.0.0.5
        /32 host LOCAL
"""
IF_INET6 = ("00000000000000000000000000000001 01 80 10 80       lo\n"
            "fd000000000000000000000000000005 02 40 00 80     eth0\n")


def test_the_machines_own_addresses_are_read_from_the_kernels_tables() -> None:
    found = local_addresses(FIB_TRIE, IF_INET6)
    assert found == {ipaddress.ip_address(a) for a in ("10.0.0.5", "10.0.0.9", "127.0.0.1", "::1", "fd00::5")}
    assert ipaddress.ip_address("127.0.0.1") in read_local_addresses()  # this machine's


def test_loopback_link_local_and_the_machines_own_addresses_are_refused() -> None:
    local = local_addresses(FIB_TRIE, IF_INET6)
    assert refusal("127.0.0.1", local) == "127.0.0.1 is a loopback address"
    assert refusal("::ffff:127.0.0.1", local) == "127.0.0.1 is a loopback address"
    assert refusal("169.254.169.254", local) == "169.254.169.254 is a link-local address"  # cloud metadata
    assert refusal("fe80::1%eth0", local) == "fe80::1 is a link-local address"
    assert refusal("0.0.0.0", local) == "0.0.0.0 is an unspecified address"
    assert refusal("10.0.0.9", local) == "10.0.0.9 is an address of the machine the proxy runs on"
    assert refusal("fd00::5", local) == "fd00::5 is an address of the machine the proxy runs on"
    assert refusal("10.0.0.7", local) is None  # another machine of that network: the cluster's business
    assert refusal("93.184.216.34", local) is None


def test_only_the_listed_clients_are_served() -> None:
    networks = parse_networks("10.0.5.21, 10.0.6.0/24,fd00::7")
    assert client_allowed("10.0.5.21", networks) and client_allowed("10.0.6.200", networks)
    assert client_allowed("::ffff:10.0.5.21", networks) and client_allowed("fd00::7", networks)
    assert not client_allowed("10.0.5.22", networks) and not client_allowed("fd00::8", networks)
    assert not client_allowed("not-an-address", networks)
    assert client_allowed("192.0.2.1", [])  # no list: anyone (the lab's own proxies)


def test_a_client_that_is_not_an_instance_is_closed_at_once() -> None:
    allow = ClientAllowList()
    with taddons.context(allow) as context:
        context.configure(allow, lab_allowed_clients="127.10.0.1,127.10.0.2")
        instance, stranger = tflow.tclient_conn(), tflow.tclient_conn()
        instance.peername, stranger.peername = ("127.10.0.1", 50000), ("127.0.0.99", 50001)
        allow.client_connected(instance)
        allow.client_connected(stranger)
        assert instance.error is None
        assert stranger.error == "client 127.0.0.99 is not an instance of the cluster: refused"
