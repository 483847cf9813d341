"""DESIGN.md §4, row by row, for every client — including .NET and WinHTTP, which cannot run here."""

from __future__ import annotations

import pytest

from proxyfleet.core.noproxy import CLIENTS

A = "http://a.proxy:3128"
B = "http://b.proxy:3128"


def decide(client: str, env: dict[str, str], url: str) -> tuple[str, str | None]:
    decision = CLIENTS[client].decide(env, url)
    return decision.decision, decision.proxy


@pytest.mark.parametrize(("client", "expected"), [
    ("go", A), ("client-go", A), ("curl", B), ("python-urllib", B), ("python-requests", B), ("dotnet", B),
])
def test_which_name_wins(client: str, expected: str) -> None:
    assert decide(client, {"HTTPS_PROXY": A, "https_proxy": B}, "https://quay.io/") == ("proxy", expected)


def test_upper_case_http_proxy_is_ignored_by_curl_only() -> None:
    env = {"HTTP_PROXY": A}
    assert decide("curl", env, "http://quay.io/")[0] == "direct"
    for client in ("go", "python-urllib", "python-requests", "dotnet"):
        assert decide(client, env, "http://quay.io/") == ("proxy", A), client


@pytest.mark.parametrize("client", ["go", "client-go", "curl", "python-urllib", "python-requests", "dotnet"])
def test_https_never_falls_back_to_the_http_proxy(client: str) -> None:
    assert decide(client, {"HTTP_PROXY": A, "http_proxy": A}, "https://quay.io/")[0] == "direct"


@pytest.mark.parametrize(("client", "uses_all"), [
    ("go", False), ("curl", True), ("python-urllib", False), ("python-requests", True), ("dotnet", True),
])
def test_all_proxy_fallback(client: str, uses_all: bool) -> None:
    result = decide(client, {"ALL_PROXY": A, "all_proxy": A}, "https://quay.io/")
    assert result == (("proxy", A) if uses_all else ("direct", None))


@pytest.mark.parametrize(("client", "direct"), [
    ("go", True), ("curl", False), ("python-urllib", False), ("python-requests", False), ("dotnet", False),
])
def test_star_inside_a_list(client: str, direct: bool) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "corp.internal,*", "no_proxy": "corp.internal,*"}
    assert (decide(client, env, "https://quay.io/")[0] == "direct") is direct


@pytest.mark.parametrize("client", ["go", "curl", "python-urllib", "python-requests"])
def test_star_alone_bypasses_everything_except_for_dotnet(client: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "*", "no_proxy": "*"}
    assert decide(client, env, "https://quay.io/")[0] == "direct"
    assert decide("dotnet", env, "https://quay.io/")[0] == "proxy"


@pytest.mark.parametrize(("client", "apex", "sub"), [
    ("go", "proxy", "direct"), ("curl", "direct", "direct"), ("python-urllib", "direct", "direct"),
    ("python-requests", "direct", "direct"), ("dotnet", "direct", "direct"),
])
def test_leading_dot(client: str, apex: str, sub: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": ".x.com", "no_proxy": ".x.com"}
    assert decide(client, env, "https://x.com/")[0] == apex
    assert decide(client, env, "https://a.x.com/")[0] == sub


@pytest.mark.parametrize(("client", "sub"), [
    ("go", "direct"), ("curl", "direct"), ("python-urllib", "direct"), ("python-requests", "direct"),
    ("dotnet", "proxy"),
])
def test_bare_domain(client: str, sub: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "x.com", "no_proxy": "x.com"}
    assert decide(client, env, "https://x.com/")[0] == "direct"
    assert decide(client, env, "https://a.x.com/")[0] == sub
    assert decide(client, env, "https://notx.com/")[0] == "proxy"


@pytest.mark.parametrize(("client", "sub"), [
    ("go", "direct"), ("curl", "proxy"), ("python-urllib", "proxy"), ("python-requests", "proxy"),
    ("dotnet", "proxy"),
])
def test_star_dot_domain(client: str, sub: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "*.x.com", "no_proxy": "*.x.com"}
    assert decide(client, env, "https://a.x.com/")[0] == sub


@pytest.mark.parametrize(("client", "v4", "v6"), [
    ("go", "direct", "direct"), ("client-go", "direct", "direct"), ("curl", "direct", "proxy"),
    ("python-urllib", "proxy", "proxy"), ("python-requests", "direct", "proxy"), ("dotnet", "proxy", "proxy"),
])
def test_cidr(client: str, v4: str, v6: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "10.0.0.0/8,fd00::/8",
           "no_proxy": "10.0.0.0/8,fd00::/8"}
    assert decide(client, env, "https://10.1.2.3/")[0] == v4
    assert decide(client, env, "https://[fd00::5]/")[0] == v6
    assert decide(client, env, "https://quay.io/")[0] == "proxy"  # CIDR never matches names


@pytest.mark.parametrize(("client", "explicit", "implicit"), [
    ("go", "direct", "proxy"), ("curl", "proxy", "proxy"), ("python-urllib", "direct", "proxy"),
    ("python-requests", "direct", "proxy"), ("dotnet", "proxy", "proxy"),
])
def test_host_port_entries(client: str, explicit: str, implicit: str) -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "x.com:8443", "no_proxy": "x.com:8443"}
    assert decide(client, env, "https://x.com:8443/")[0] == explicit
    assert decide(client, env, "https://x.com/")[0] == implicit


@pytest.mark.parametrize(("client", "localhost"), [
    ("go", "direct"), ("client-go", "direct"), ("curl", "proxy"), ("python-urllib", "proxy"),
    ("python-requests", "proxy"), ("dotnet", "proxy"),
])
def test_loopback(client: str, localhost: str) -> None:
    env = {"HTTP_PROXY": A, "http_proxy": A}
    assert decide(client, env, "http://localhost:8080/")[0] == localhost
    assert decide(client, env, "http://127.0.0.1:8080/")[0] == localhost


@pytest.mark.parametrize(("client", "with_port", "without_port"), [
    ("go", "http://p.corp:3128", "http://p.corp"),
    ("curl", "http://p.corp:3128", "http://p.corp:1080"),
    ("python-urllib", "https://p.corp:3128", "https://p.corp"),
    ("python-requests", "http://p.corp:3128", "http://p.corp"),
    ("dotnet", "http://p.corp:3128", "http://p.corp:80"),
])
def test_proxy_without_scheme(client: str, with_port: str, without_port: str) -> None:
    assert decide(client, {"HTTPS_PROXY": "p.corp:3128", "https_proxy": "p.corp:3128"},
                  "https://quay.io/") == ("proxy", with_port)
    assert decide(client, {"HTTPS_PROXY": "p.corp", "https_proxy": "p.corp"},
                  "https://quay.io/") == ("proxy", without_port)


def test_go_refuses_http_proxy_in_cgi() -> None:
    assert decide("go", {"HTTP_PROXY": A, "REQUEST_METHOD": "GET"}, "http://quay.io/")[0] == "error"


def test_semicolons_are_not_separators_for_env_clients() -> None:
    env = {"HTTPS_PROXY": A, "https_proxy": A, "NO_PROXY": "a.com;b.com", "no_proxy": "a.com;b.com"}
    for client in ("go", "curl", "python-urllib", "python-requests", "dotnet"):
        assert decide(client, env, "https://b.com/")[0] == "proxy", client
