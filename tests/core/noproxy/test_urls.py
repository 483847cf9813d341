"""Splitting request URLs the way clients do: the host as written, IPv6 without brackets, explicit
or default ports, and a clear error for what no client accepts."""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote, urlsplit

import pytest

from proxyfleet.core.noproxy import CLIENTS, redact_text, redact_url
from proxyfleet.core.noproxy.urls import URLError, parse_ip, parse_target, split_netloc, with_userinfo


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


@pytest.mark.parametrize("auth", [
    "vendor:p/a#s@s%w?o:rd",  # every character that would end or split the authority
    "us:er@corp:pass word é",  # a ":" in the password (split at the first), a space, non-ASCII
    "user",  # no password
])
def test_credentials_put_in_a_url_parse_back_exactly(auth: str) -> None:
    url = with_userinfo("http://proxy.corp.internal:3128", auth)
    parts = urlsplit(url)
    assert (parts.hostname, parts.port, parts.path, parts.query, parts.fragment) == ("proxy.corp.internal", 3128,
                                                                                     "", "", "")
    user, password = unquote(parts.username or ""), parts.password
    assert (f"{user}:{unquote(password)}" if password is not None else user) == auth
    assert parse_target(url).host == "proxy.corp.internal"
    # the encoded credentials are what redaction must hide, in a report's text and as a URL
    hidden = "***:***" if ":" in auth else "***"
    assert redact_url(url) == f"http://{hidden}@proxy.corp.internal:3128"
    assert redact_text(f"proxy {url} refused") == "proxy http://***:***@proxy.corp.internal:3128 refused"


def test_sub_delims_stay_as_written_and_the_rest_is_encoded() -> None:
    assert with_userinfo("https://p:3129", "o'brien:pa$(x)!&*+,;=") == "https://o'brien:pa$(x)!&*+,;=@p:3129"
    assert with_userinfo("http://p:1", "a:b:c/d?e#f@g%h i") == "http://a:b%3Ac%2Fd%3Fe%23f%40g%25h%20i@p:1"
    assert with_userinfo("http://p:1", "ü:é") == "http://%C3%BC:%C3%A9@p:1"
    assert with_userinfo("http://p:1", "-._~:-._~") == "http://-._~:-._~@p:1"  # unreserved
    for bad in ("p:3128", "http://u:pw@p:3128"):
        with pytest.raises(URLError, match="without any of its own") as raised:
            with_userinfo(bad, "a:b")
        assert "pw" not in str(raised.value)
