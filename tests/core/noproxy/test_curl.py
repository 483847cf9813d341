"""curl's own reading (Curl_check_noproxy, verified against Debian's curl): proxy normalisation
with port 1080, commas and blanks as separators, IPv4 CIDR, and suffix matching on dot boundaries."""

from __future__ import annotations

from proxyfleet.core.noproxy.curl import _tokens, check_no_proxy, normalise_proxy


def test_proxy_values_get_a_scheme_and_curls_default_ports() -> None:
    assert normalise_proxy("p.corp") == "http://p.corp:1080"
    assert normalise_proxy("https://p.corp") == "https://p.corp:443"
    assert normalise_proxy("http://u:pw@p.corp:3128") == "http://u:pw@p.corp:3128"
    assert normalise_proxy("http://:3128") is None
    assert normalise_proxy("http://p.corp:99999") is None


def test_blanks_separate_entries_and_are_flagged() -> None:
    assert _tokens("a.com, b.com,,c.com") == (["a.com", "b.com", "c.com"], False)
    assert _tokens("a.com b.com") == (["a.com", "b.com"], True)


def test_names_match_whole_labels_and_ignore_leading_and_trailing_dots() -> None:
    assert check_no_proxy("a.x.com", ".x.com") == ".x.com"
    assert check_no_proxy("x.com", ".x.com") == ".x.com"
    assert check_no_proxy("notx.com", "x.com") is None
    assert check_no_proxy("X.COM.", "x.com.") == "x.com."
    assert check_no_proxy("anything", "*") == "*"
    assert check_no_proxy("anything", "a.com,*") is None  # '*' only alone


def test_ipv4_literals_match_cidr_and_exact_entries_ipv6_only_as_text() -> None:
    assert check_no_proxy("10.1.2.3", "10.0.0.0/8") == "10.0.0.0/8"
    assert check_no_proxy("10.1.2.3", "10.1.2.3") == "10.1.2.3"
    assert check_no_proxy("10.1.2.3", "10.0.0.0/33") is None
    assert check_no_proxy("fd00::1", "fd00::/8") is None
    assert check_no_proxy("fd00::1", "fd00::1") == "fd00::1"
