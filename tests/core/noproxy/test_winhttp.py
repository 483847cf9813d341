"""WinHTTP's own settings (``netsh winhttp``): per-scheme proxy-server entries and the ';' bypass
list with ``<local>`` and leading wildcards only."""

from __future__ import annotations

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.core.noproxy.winhttp import bypass_match, proxy_for_scheme

A = "http://a.proxy:3128"


def decide(client: str, env: dict[str, str], url: str) -> tuple[str, str | None]:
    decision = CLIENTS[client].decide(env, url)
    return decision.decision, decision.proxy


def test_proxy_server_entries_per_scheme_or_one_for_all() -> None:
    assert proxy_for_scheme("http=p:80;https=s:443", "https") == "s:443"
    assert proxy_for_scheme("http=p:80", "https") is None
    assert proxy_for_scheme("all.corp:8080", "https") == "all.corp:8080"
    assert proxy_for_scheme("https=s:443 plain:1", "http") == "plain:1"  # blanks separate too


def test_bypass_entries() -> None:
    assert bypass_match("intranet", "<local>") == "<local>"
    assert bypass_match("10.0.0.1", "<local>") is None  # an IP literal is not a local name
    assert bypass_match("A.Corp.Internal", "*.corp.internal") == "*.corp.internal"
    assert bypass_match("x.y.corp", "*.*.corp") is None  # only a leading wildcard is understood
    assert bypass_match("10.1.2.3", "10.*") is None


def test_winhttp_bypass_list() -> None:
    settings = {"proxy-server": "http=p.corp:8080;https=s.corp:8443",
                "bypass-list": "<local>;*.corp.internal;registry.lab;10.*"}
    assert decide("winhttp", settings, "https://quay.io/") == ("proxy", "http://s.corp:8443")
    assert decide("winhttp", settings, "http://quay.io/") == ("proxy", "http://p.corp:8080")
    assert decide("winhttp", settings, "https://intranet/")[0] == "direct"  # <local>: no dot
    assert decide("winhttp", settings, "https://a.corp.internal/")[0] == "direct"
    assert decide("winhttp", settings, "https://registry.lab/")[0] == "direct"
    assert decide("winhttp", settings, "https://sub.registry.lab/")[0] == "proxy"  # exact only
    assert decide("winhttp", settings, "https://10.1.2.3/")[0] == "proxy"  # wildcard only leftmost
    assert decide("winhttp", {"HTTPS_PROXY": A}, "https://quay.io/")[0] == "direct"  # no env vars


