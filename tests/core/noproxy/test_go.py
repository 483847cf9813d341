"""Go's golang.org/x/net/http/httpproxy pieces: SplitHostPort, parseProxy and the NO_PROXY
matchers (the whole decision is checked against a real Go build in test_differential)."""

from __future__ import annotations

import ipaddress

from proxyfleet.core.noproxy.go import parse_no_proxy, parse_proxy, split_host_port


def test_split_host_port_like_net_split_host_port() -> None:
    assert split_host_port("a.com:80") == ("a.com", "80")
    assert split_host_port("[::1]:443") == ("::1", "443")
    assert split_host_port("a.com") is None
    assert split_host_port("::1") is None  # too many colons without brackets
    assert split_host_port("[::1]") is None


def test_parse_proxy_adds_http_to_unknown_schemes() -> None:
    assert parse_proxy("p.corp:3128") == "http://p.corp:3128"
    assert parse_proxy("socks5://p:1080") == "socks5://p:1080"
    assert parse_proxy("") is None


def test_no_proxy_matchers() -> None:
    matchers = parse_no_proxy(" .corp.internal, quay.io:443, 10.0.0.0/8, 192.168.1.5, [fd00::1]:8443, *.svc,,")
    assert matchers.cidrs == [ipaddress.ip_network("10.0.0.0/8")]
    assert [(str(ip), port) for ip, port, _ in matchers.ips] == [("192.168.1.5", ""), ("fd00::1", "8443")]
    assert [(suffix, port, exact) for suffix, port, exact, _ in matchers.domains] == [
        (".corp.internal", "", False), (".quay.io", "443", True), (".svc", "", False)]
    assert parse_no_proxy("a.com,*").everything
