"""Squid's native access-log layout read as flow records, as Squid and Traffic Server write it:
tunnels, requests the proxy read itself, refusals; never a user name."""

import pytest

from proxyfleet.harness.lab.squidlog import SquidLogError, parse_native, parse_trafficserver

TUNNEL = "1795489664.165     11 127.10.0.1 TCP_TUNNEL/200 36259 CONNECT quay.io:443 - HIER_DIRECT/127.30.0.1 -"
PLAIN = ("1795489664.181      1 127.10.0.2 TCP_MISS/200 295 GET http://ctldl.windowsupdate.com/x?y=1 alice "
         "HIER_DIRECT/127.30.0.3 text/plain")
BUMPED = "1795489664.2 3 127.10.0.3 TCP_MISS/200 900 GET https://quay.io/v2/ - HIER_DIRECT/127.30.0.1 application/json"
AUTH = "1795489664.3 0 127.10.0.4 TCP_DENIED/407 4000 CONNECT quay.io:443 - HIER_NONE/- text/html"
DENIED = "1795489664.4 0 127.10.0.5 TCP_DENIED/403 3900 CONNECT [::1]:8443 - HIER_NONE/- text/html"


def test_a_tunnel_is_a_connect_that_was_not_intercepted() -> None:
    record = parse_native(TUNNEL)
    assert record["kind"] == "connect" and record["intercepted"] is False
    assert (record["client"], record["host"], record["port"], record["status"]) == ("127.10.0.1", "quay.io", 443, 200)
    assert record["time"].startswith("2026-11-24T") and record["error"] is None


def test_a_request_the_proxy_read_is_intercepted_and_carries_no_user_name() -> None:
    plain, bumped = parse_native(PLAIN), parse_native(BUMPED)
    assert (plain["kind"], plain["scheme"], plain["host"], plain["port"], plain["path"]) == \
        ("request", "http", "ctldl.windowsupdate.com", 80, "/x?y=1")
    assert plain["intercepted"] and "alice" not in str(plain.values())
    assert (bumped["scheme"], bumped["port"], bumped["connect_target"]) == ("https", 443, "quay.io:443")


def test_refusals_keep_their_status_and_squid_code() -> None:
    auth, denied = parse_native(AUTH), parse_native(DENIED)
    assert (auth["status"], auth["error"]) == (407, "TCP_DENIED")
    assert (denied["host"], denied["port"], denied["status"]) == ("::1", 8443, 403)


@pytest.mark.parametrize("line", ["", "garbage", "1.0 1 127.0.0.1 TCP_MISS/abc 1 GET http://x/ - H -",
                                  "1.0 1 127.0.0.1 TCP_MISS/200 1 GET /relative - HIER_NONE/- -",
                                  "1.0 1 127.0.0.1 TCP_TUNNEL/200 1 CONNECT quay.io - HIER_NONE/- -"])
def test_other_lines_are_rejected_not_guessed(line: str) -> None:
    with pytest.raises(SquidLogError):
        parse_native(line)


# Squid 5.7 (Debian bookworm, squid-openssl 5.7-2+deb12u6) with examples/squid/squid.conf (its
# `access_log ... squid`, the native format; strip_query_terms on, Squid's default) plus Basic
# authentication for auth.example, on loopback; curl 7.88.1 sent a CONNECT quay.io:443, an
# absolute-form GET with a query, a CONNECT to port 8443, a CONNECT with alice's right password
# (from 127.10.0.9), one with a wrong password, and a CONNECT to [::1]:443 (denied: not 127/8).
SQUID_5_7 = """\
1795641499.998      4 127.0.0.1 TCP_TUNNEL/200 2089 CONNECT quay.io:443 - HIER_DIRECT/127.77.0.11 -
1795641500.007      1 127.0.0.1 TCP_MISS/200 304 GET http://ctldl.windowsupdate.com/msdownload/update/v3/static/trustedr/en/authrootstl.cab? - HIER_DIRECT/127.77.0.10 text/plain
1795641500.016      1 127.0.0.1 TCP_DENIED/403 3464 CONNECT quay.io:8443 - HIER_NONE/- text/html
1795641501.476     20 127.10.0.9 TCP_TUNNEL/200 2089 CONNECT auth.example:443 alice HIER_DIRECT/127.77.0.11 -
1795641501.492      7 127.0.0.1 TCP_DENIED/407 3580 CONNECT auth.example:443 alice HIER_NONE/- text/html
1795641501.494      0 127.0.0.1 TCP_DENIED/403 3470 CONNECT [::1]:443 - HIER_NONE/- text/html
""".splitlines()

# Apache Traffic Server 9.2.5 (Debian bookworm, trafficserver 9.2.5+ds-0+deb12u4; it reports
# itself as 9.2.9) with examples/trafficserver's records.config and the `squid` format of Debian's
# /etc/trafficserver/logging.yaml written with `mode: ascii` (traffic_logcat printed the same
# lines from the default binary squid.blog): CONNECT quay.io:443, an absolute-form GET, a CONNECT
# to port 8443 (connect_ports 443), a CONNECT to a name that does not resolve, a GET to an origin
# that refused the connection, a GET to 8.8.8.8 (ip_allow: out only to 127/8).
TRAFFICSERVER_9_2 = """\
1795641477.467 36 127.0.0.1 TCP_MISS/200 2260 CONNECT quay.io:443/ - DIRECT/quay.io -
1795641477.524 19 127.0.0.1 TCP_MISS/200 164 GET http://ctldl.windowsupdate.com/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1 - DIRECT/ctldl.windowsupdate.com text/plain
1795641477.551 0 127.0.0.1 ERR_PROXY_DENIED/403 419 CONNECT quay.io:8443/ - NONE/- text/html
1795641477.564 3063 127.0.0.1 ERR_UNKNOWN/500 606 CONNECT nowhere.example:443/ - NONE/- text/html
1795641480.636 18 127.0.0.1 ERR_CONNECT_FAIL/502 461 GET http://refused.example/ - DIRECT/refused.example text/html
1795641480.668 18 127.0.0.1 ERR_PROXY_DENIED/403 458 GET http://8.8.8.8/ - DIRECT/8.8.8.8 text/html
""".splitlines()


def test_real_squid_lines_read_with_their_codes_and_without_the_user_name() -> None:
    records = [parse_native(line) for line in SQUID_5_7]
    assert [(r["client"], r["kind"], r["host"], r["port"], r["status"], r["squid_code"]) for r in records] == [
        ("127.0.0.1", "connect", "quay.io", 443, 200, "TCP_TUNNEL"),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, 200, "TCP_MISS"),
        ("127.0.0.1", "connect", "quay.io", 8443, 403, "TCP_DENIED"),
        ("127.10.0.9", "connect", "auth.example", 443, 200, "TCP_TUNNEL"),
        ("127.0.0.1", "connect", "auth.example", 443, 407, "TCP_DENIED"),
        ("127.0.0.1", "connect", "::1", 443, 403, "TCP_DENIED"),
    ]
    assert records[0]["time"] == "2026-11-25T21:18:19.998000+00:00" and records[0]["format"] == "squid"
    assert records[1]["path"] == "/msdownload/update/v3/static/trustedr/en/authrootstl.cab"  # query stripped by Squid
    assert not any("alice" in str(r.values()) for r in records)


def test_real_traffic_server_lines_read_with_its_connect_target_and_codes() -> None:
    records = [parse_trafficserver(line) for line in TRAFFICSERVER_9_2]
    assert [(r["kind"], r["host"], r["port"], r["status"], r["squid_code"], r["error"]) for r in records] == [
        ("connect", "quay.io", 443, 200, "TCP_MISS", None),
        ("request", "ctldl.windowsupdate.com", 80, 200, "TCP_MISS", None),
        ("connect", "quay.io", 8443, 403, "ERR_PROXY_DENIED", "ERR_PROXY_DENIED"),
        ("connect", "nowhere.example", 443, 500, "ERR_UNKNOWN", "ERR_UNKNOWN"),
        ("request", "refused.example", 80, 502, "ERR_CONNECT_FAIL", "ERR_CONNECT_FAIL"),
        ("request", "8.8.8.8", 80, 403, "ERR_PROXY_DENIED", "ERR_PROXY_DENIED"),
    ]
    assert records[0]["connect_target"] == "quay.io:443" and records[0]["format"] == "trafficserver"
    assert records[1]["path"] == "/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1"


def test_squids_parser_leaves_traffic_servers_connect_lines_alone() -> None:
    # so that ``auto`` tells them apart by the first line format that reads them
    with pytest.raises(SquidLogError):
        parse_native(TRAFFICSERVER_9_2[0])
