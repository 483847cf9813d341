""".NET's HttpEnvironmentProxy: GetUriFromString's defaults, lower-case names first, and its
NO_PROXY matching (exact names, leading-dot suffixes, no '*', no CIDR)."""

from __future__ import annotations

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.core.noproxy.dotnet import uri_from_string


def test_uri_from_string_defaults() -> None:
    assert uri_from_string("p.corp") == "http://p.corp:80"
    assert uri_from_string("https://p.corp") == "https://p.corp:443"
    assert uri_from_string("socks5://p") == "socks5://p:1080"
    assert uri_from_string("http://u:pw@p:3128") == "http://u:pw@p:3128"
    assert uri_from_string("ftp://p") is None


def test_cidr_entries_do_not_bypass() -> None:
    env = {"https_proxy": "http://a:1", "no_proxy": "10.0.0.0/8,.corp"}
    dotnet = CLIENTS["dotnet"]
    assert dotnet.decide(env, "https://10.1.2.3/").decision == "proxy"
    assert dotnet.decide(env, "https://x.corp/").decision == "direct"


def test_an_unusable_lower_case_value_falls_back_to_upper_case() -> None:
    env = {"https_proxy": "ftp://bad", "HTTPS_PROXY": "http://good:1"}
    assert CLIENTS["dotnet"].decide(env, "https://quay.io/").proxy == "http://good:1"
