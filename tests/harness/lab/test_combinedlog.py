"""The common and combined log formats read as flow records, from real Apache httpd, nginx and
Traffic Server lines: CONNECT and absolute-form requests, refusals by status, never the user."""

import pytest

from proxyfleet.harness.lab.combinedlog import CombinedLogError, parse_combined

# Apache httpd 2.4.71 (Debian bookworm, apache2 2.4.71-1~deb12u1): mod_proxy, mod_proxy_connect,
# mod_proxy_http, `ProxyRequests On`, `AllowCONNECT 443`, Debian's apache2.conf `combined`
# LogFormat ("%h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\""), HostnameLookups off
# (the default). curl 7.88.1: CONNECT quay.io:443, an absolute-form GET, a CONNECT to a denied
# host (<ProxyMatch> Require all denied), a CONNECT to port 8443, a CONNECT to a name that does
# not resolve, CONNECTs with alice's right and wrong password (Basic auth), and requests to [::1].
APACHE_COMBINED = """\
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "GET http://ctldl.windowsupdate.com/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1 HTTP/1.1" 200 143 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT evil.example:443 HTTP/1.1" 403 400 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:8443 HTTP/1.1" 403 516 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT nowhere.example:443 HTTP/1.1" 502 551 "-" "curl/7.88.1"
127.0.0.1 - alice [25/Nov/2026:21:17:27 +0000] "CONNECT auth.example:443 HTTP/1.1" 200 2126 "-" "curl/7.88.1"
127.0.0.1 - alice [25/Nov/2026:21:17:27 +0000] "CONNECT auth.example:443 HTTP/1.1" 407 677 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT [::1]:443 HTTP/1.1" 503 529 "-" "curl/7.88.1"
127.10.0.9 - - [25/Nov/2026:21:17:27 +0000] "GET http://[::1]:8080/p HTTP/1.1" 503 529 "-" "curl/7.88.1"
""".splitlines()

# The same httpd, the same requests, Debian's `common` LogFormat ("%h %l %u %t \"%r\" %>s %O").
APACHE_COMMON = """\
127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126
127.0.0.1 - alice [25/Nov/2026:21:17:27 +0000] "CONNECT auth.example:443 HTTP/1.1" 407 677
""".splitlines()

# nginx 1.22.1 (Debian bookworm, nginx-light 1.22.1-9+deb12u11), `access_log ... combined` (its
# built-in format) and proxy_pass: it forwards absolute-form requests and answers CONNECT 400.
NGINX_COMBINED = """\
127.0.0.1 - - [25/Nov/2026:21:17:42 +0000] "GET http://ctldl.windowsupdate.com/msdownload/x.cab?y=1 HTTP/1.1" 200 6 "-" "curl/7.88.1"
127.0.0.1 - - [25/Nov/2026:21:17:42 +0000] "CONNECT quay.io:443 HTTP/1.1" 400 157 "-" "-"
""".splitlines()

# Apache Traffic Server 9.2.5 (Debian bookworm), the `common` format of Debian's logging.yaml
# ('%<chi> - %<caun> [%<cqtn>] "%<cqtx>" %<pssc> %<pscl>'), `mode: ascii`.
TRAFFICSERVER_COMMON = """\
127.0.0.1 - - [25/Nov/2026:21:17:57 -0000] "CONNECT quay.io:443/ HTTP/1.1" 200 2155
127.0.0.1 - - [25/Nov/2026:21:18:00 -0000] "GET http://refused.example/ HTTP/1.1" 502 247
""".splitlines()


def _summary(line: str) -> tuple[object, ...]:
    record = parse_combined(line)
    return record["client"], record["kind"], record["host"], record["port"], record["status"]


def test_apache_as_a_forward_proxy() -> None:
    assert [_summary(line) for line in APACHE_COMBINED] == [
        ("127.0.0.1", "connect", "quay.io", 443, 200),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, 200),
        ("127.0.0.1", "connect", "evil.example", 443, 403),
        ("127.0.0.1", "connect", "quay.io", 8443, 403),
        ("127.0.0.1", "connect", "nowhere.example", 443, 502),
        ("127.0.0.1", "connect", "auth.example", 443, 200),
        ("127.0.0.1", "connect", "auth.example", 443, 407),
        ("127.0.0.1", "connect", "::1", 443, 503),
        ("127.10.0.9", "request", "::1", 8080, 503),
    ]
    tunnel, plain = parse_combined(APACHE_COMBINED[0]), parse_combined(APACHE_COMBINED[1])
    assert tunnel["time"] == "2026-11-25T21:17:27+00:00" and tunnel["format"] == "combined"
    assert (tunnel["method"], tunnel["connect_target"], tunnel["intercepted"], tunnel["error"]) == \
        ("CONNECT", "quay.io:443", False, None)
    assert (plain["method"], plain["scheme"], plain["intercepted"]) == ("GET", "http", True)
    assert plain["path"] == "/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1"


def test_the_user_name_is_never_read() -> None:
    for line in (APACHE_COMBINED[6], APACHE_COMMON[1]):
        assert "alice" not in str(parse_combined(line).values())


def test_common_nginx_and_traffic_server_lines() -> None:
    assert [_summary(line) for line in APACHE_COMMON] == [("127.0.0.1", "connect", "quay.io", 443, 200),
                                                          ("127.0.0.1", "connect", "auth.example", 443, 407)]
    assert [_summary(line) for line in NGINX_COMBINED] == [("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, 200),
                                                           ("127.0.0.1", "connect", "quay.io", 443, 400)]
    assert [_summary(line) for line in TRAFFICSERVER_COMMON] == [("127.0.0.1", "connect", "quay.io", 443, 200),
                                                                 ("127.0.0.1", "request", "refused.example", 80, 502)]
    assert parse_combined(TRAFFICSERVER_COMMON[0])["time"] == "2026-11-25T21:17:57+00:00"  # "-0000" is UTC


@pytest.mark.parametrize("line", [
    # a request to the server itself, not through it
    '127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "GET / HTTP/1.1" 403 199 "-" "curl/7.88.1"',
    # Apache's line for a connection that sent no request (408)
    '127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "-" 408 - "-" "-"',
    # vhost_combined: the virtual host first
    'proxy:3128 127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126 "-" "curl"',
    "1795641499.998      4 127.0.0.1 TCP_TUNNEL/200 2089 CONNECT quay.io:443 - HIER_DIRECT/127.77.0.11 -",
    '127.0.0.1 - - [25/Xyz/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126',
    '127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io HTTP/1.1" 200 2126',
])
def test_other_lines_are_rejected_not_guessed(line: str) -> None:
    with pytest.raises(CombinedLogError):
        parse_combined(line)
