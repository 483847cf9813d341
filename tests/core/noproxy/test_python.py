"""Python's urllib reading of the environment: lower-case names win, an empty lower-case value
unsets, CGI drops HTTP_PROXY, and proxy_bypass_environment's suffix matching."""

from __future__ import annotations

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.core.noproxy.python import environment_proxies, urllib_bypass


def test_lower_case_wins_and_an_empty_lower_case_value_unsets() -> None:
    assert environment_proxies({"HTTPS_PROXY": "http://A", "https_proxy": "http://b"}) == {
        "https": ("http://b", "https_proxy")}
    assert environment_proxies({"HTTPS_PROXY": "http://A", "https_proxy": ""}) == {}


def test_cgi_drops_upper_case_http_proxy() -> None:
    assert "http" not in environment_proxies({"HTTP_PROXY": "http://a", "REQUEST_METHOD": "GET"})
    assert "http" in environment_proxies({"http_proxy": "http://a", "REQUEST_METHOD": "GET"})


def test_bypass_matches_suffixes_with_or_without_port() -> None:
    proxies = {"no": (".corp, quay.io", "no_proxy")}
    assert urllib_bypass("a.corp:8443", proxies) == "no_proxy entry '.corp' matches a.corp:8443"
    assert urllib_bypass("QUAY.io", proxies) is not None
    assert urllib_bypass("notquay.io", proxies) is None
    assert urllib_bypass("x", {"no": ("*", "NO_PROXY")}) == "NO_PROXY is '*'"
    assert urllib_bypass("x", {}) is None


def test_requests_honours_cidr_entries_where_urllib_does_not() -> None:
    env = {"https_proxy": "http://a:1", "no_proxy": "10.0.0.0/8"}
    assert CLIENTS["python-requests"].decide(env, "https://10.1.2.3/").decision == "direct"
    assert CLIENTS["python-urllib"].decide(env, "https://10.1.2.3/").decision == "proxy"
