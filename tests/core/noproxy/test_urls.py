"""Splitting request URLs the way clients do: the host as written, IPv6 without brackets, explicit
or default ports, and a clear error for what no client accepts."""

from __future__ import annotations

import ipaddress

import pytest

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.core.noproxy.urls import URLError, parse_ip, parse_target, split_netloc


def test_targets_keep_the_host_as_written() -> None:
    target = parse_target("HTTPS://Quay.IO:8443/v2/")
    assert (target.scheme, target.host, target.port, target.effective_port) == ("https", "Quay.IO", "8443", "8443")
    assert parse_target("http://user:pw@[::1]/").host == "::1"
    assert parse_target("http://user:pw@[::1]/").bracketed
    assert parse_target("wss://x.com/").effective_port == "443"


def test_ipv4_mapped_addresses_fold_to_ipv4() -> None:
    assert parse_ip("::ffff:10.0.0.1") == ipaddress.IPv4Address("10.0.0.1")
    assert parse_ip("quay.io") is None


def test_netloc_split_like_go() -> None:
    assert split_netloc("u:p@h:80") == ("h", "80", False)
    assert split_netloc("h:") == ("h", "", False)
    assert split_netloc("[fe80::1]:443") == ("fe80::1", "443", True)


@pytest.mark.parametrize(("url", "message"), [
    ("not a url", "an absolute URL with a host is required"),
    ("https://exa mple.com/", "bad host"),
    ("https://quay.io:99999/", "out of range"),
])
def test_bad_urls_are_specific_errors(url: str, message: str) -> None:
    with pytest.raises(URLError, match=message):
        parse_target(url)


def test_every_client_reports_a_bad_url_as_an_error() -> None:
    for client in CLIENTS:
        for url in ("not a url", "https://exa mple.com/", "https://quay.io:99999/"):
            assert CLIENTS[client].decide({"HTTPS_PROXY": "http://a:1"}, url).decision == "error", (client, url)
