"""Go's golang.org/x/net/http/httpproxy pieces: SplitHostPort, parseProxy and the NO_PROXY
matchers (the whole decision is checked against a real Go build in test_differential)."""

from __future__ import annotations

import ipaddress

from proxyfleet.core.noproxy.go import ClientGoRules, GoRules, parse_no_proxy, parse_proxy, split_host_port


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


def test_a_decision_is_remembered_only_for_the_same_variables_and_url() -> None:
    """Decisions are remembered per URL and value of every variable Go reads: any change — a
    proxy, NO_PROXY in either spelling, the CGI marker — is decided afresh, never from memory."""
    for rules in (GoRules(), ClientGoRules()):
        environments: list[dict[str, str]] = [
            {},
            {"HTTPS_PROXY": "http://p:3128"},
            {"https_proxy": "http://q:3128"},
            {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "api.cluster"},
            {"HTTPS_PROXY": "http://p:3128", "no_proxy": "10.0.0.0/8"},
            {"HTTP_PROXY": "http://p:3128"},
            {"HTTP_PROXY": "http://p:3128", "REQUEST_METHOD": "GET"},
        ]
        urls = ["https://api.cluster:6443/", "https://10.1.2.3/", "http://example.com/"]
        for _ in range(2):  # the second round answers from memory
            for env in environments:
                for url in urls:
                    assert rules.decide(env, url) == rules._decide(env, url), (env, url)
        assert rules.decide({"HTTPS_PROXY": "http://p:3128"}, urls[0]).decision == "proxy"
        assert rules.decide({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "api.cluster"}, urls[0]).decision == "direct"
