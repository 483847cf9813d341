"""tinyproxy's own log read as flow records: one per request line, completed by the lines that
follow; no status ever (tinyproxy logs none), only what it did log."""

import datetime as dt
from typing import Any

from proxyfleet.harness.lab.tinyproxylog import TinyproxyReader

# tinyproxy 1.11.1 (Debian bookworm, 1.11.1-2.1+deb12u1), `tinyproxy -d` as a forward proxy on
# loopback: Listen/Port/Bind, ConnectPort 443, Filter with FilterDefaultDeny Yes (quay.io,
# ctldl.windowsupdate.com, nowhere.example allowed), LogLevel Info (Debian's default). curl 7.88.1
# sent: CONNECT quay.io:443, GET ctldl.windowsupdate.com (absolute form), CONNECT and GET to a
# filtered domain, CONNECT to port 8443, CONNECT and GET to a name that does not resolve, and a GET
# with credentials in the proxy URL (tinyproxy without BasicAuth ignores them).
INFO_LEVEL = """\
NOTICE    Nov 25 21:16:07.188 [29890]: Initializing tinyproxy ...
INFO      Nov 25 21:16:07.194 [29890]: Starting main loop. Accepting connections.
CONNECT   Nov 25 21:16:15.537 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.537 [29890]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1
INFO      Nov 25 21:16:15.539 [29890]: No upstream proxy for quay.io
INFO      Nov 25 21:16:15.541 [29890]: opensock: opening connection to quay.io:443
INFO      Nov 25 21:16:15.544 [29890]: opensock: getaddrinfo returned for quay.io:443
INFO      Nov 25 21:16:15.546 [29890]: Bound to 127.77.0.3
CONNECT   Nov 25 21:16:15.549 [29890]: Established connection to host "quay.io" using file descriptor 6.
INFO      Nov 25 21:16:15.550 [29890]: Not sending client headers to remote machine
INFO      Nov 25 21:16:15.559 [29890]: Closed connection between local client (fd:5) and remote client (fd:6)
CONNECT   Nov 25 21:16:15.576 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.577 [29890]: Request (file descriptor 5): GET http://ctldl.windowsupdate.com/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1 HTTP/1.1
INFO      Nov 25 21:16:15.578 [29890]: No upstream proxy for ctldl.windowsupdate.com
INFO      Nov 25 21:16:15.580 [29890]: opensock: opening connection to ctldl.windowsupdate.com:80
INFO      Nov 25 21:16:15.584 [29890]: opensock: getaddrinfo returned for ctldl.windowsupdate.com:80
INFO      Nov 25 21:16:15.588 [29890]: Bound to 127.77.0.3
CONNECT   Nov 25 21:16:15.590 [29890]: Established connection to host "ctldl.windowsupdate.com" using file descriptor 6.
INFO      Nov 25 21:16:15.591 [29890]: Closed connection between local client (fd:5) and remote client (fd:6)
CONNECT   Nov 25 21:16:15.602 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.603 [29890]: Request (file descriptor 5): CONNECT evil.example:443 HTTP/1.1
NOTICE    Nov 25 21:16:15.603 [29890]: Proxying refused on filtered domain "evil.example"
CONNECT   Nov 25 21:16:15.641 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.642 [29890]: Request (file descriptor 5): GET http://evil.example/ HTTP/1.1
NOTICE    Nov 25 21:16:15.642 [29890]: Proxying refused on filtered domain "evil.example"
CONNECT   Nov 25 21:16:15.656 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.657 [29890]: Request (file descriptor 5): CONNECT quay.io:8443 HTTP/1.1
INFO      Nov 25 21:16:15.657 [29890]: Refused CONNECT method on port 8443
CONNECT   Nov 25 21:16:15.675 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.678 [29890]: Request (file descriptor 5): CONNECT nowhere.example:443 HTTP/1.1
INFO      Nov 25 21:16:15.680 [29890]: No upstream proxy for nowhere.example
INFO      Nov 25 21:16:15.684 [29890]: opensock: opening connection to nowhere.example:443
ERROR     Nov 25 21:16:15.689 [29890]: opensock: Could not retrieve address info for nowhere.example:443: Name or service not known
CONNECT   Nov 25 21:16:15.700 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.701 [29890]: Request (file descriptor 5): GET http://nowhere.example/ HTTP/1.1
INFO      Nov 25 21:16:15.701 [29890]: No upstream proxy for nowhere.example
INFO      Nov 25 21:16:15.702 [29890]: opensock: opening connection to nowhere.example:80
ERROR     Nov 25 21:16:15.703 [29890]: opensock: Could not retrieve address info for nowhere.example:80: Name or service not known
CONNECT   Nov 25 21:16:15.712 [29890]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:15.712 [29890]: Request (file descriptor 5): GET http://ctldl.windowsupdate.com/ HTTP/1.1
INFO      Nov 25 21:16:15.713 [29890]: No upstream proxy for ctldl.windowsupdate.com
INFO      Nov 25 21:16:15.713 [29890]: opensock: opening connection to ctldl.windowsupdate.com:80
INFO      Nov 25 21:16:15.713 [29890]: opensock: getaddrinfo returned for ctldl.windowsupdate.com:80
INFO      Nov 25 21:16:15.713 [29890]: Bound to 127.77.0.3
CONNECT   Nov 25 21:16:15.713 [29890]: Established connection to host "ctldl.windowsupdate.com" using file descriptor 6.
INFO      Nov 25 21:16:15.715 [29890]: Closed connection between local client (fd:5) and remote client (fd:6)
NOTICE    Nov 25 21:16:35.931 [29890]: Shutting down.
"""

# The same tinyproxy at LogLevel Connect (as examples/tinyproxy/tinyproxy.conf) with `BasicAuth
# alice secret`: CONNECT and GET with the right credentials, a GET with a wrong password (401) and
# a CONNECT with none (407) — neither refusal is logged —, a CONNECT to port 8443 (403, logged at
# INFO only, so not here), a filtered domain, then two tunnels at once from 127.10.0.8 and
# 127.10.0.7 (curl --interface).
CONNECT_LEVEL = """\
DEBUG     Nov 25 21:16:36.443 [3144]: sending stored logs
NOTICE    Nov 25 21:16:36.443 [3144]: Initializing tinyproxy ...
DEBUG     Nov 25 21:16:36.444 [3144]: done sending stored logs
CONNECT   Nov 25 21:16:37.449 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.449 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1
CONNECT   Nov 25 21:16:37.449 [3144]: Established connection to host "quay.io" using file descriptor 6.
CONNECT   Nov 25 21:16:37.461 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.462 [3144]: Request (file descriptor 5): GET http://ctldl.windowsupdate.com/a HTTP/1.1
CONNECT   Nov 25 21:16:37.462 [3144]: Established connection to host "ctldl.windowsupdate.com" using file descriptor 6.
CONNECT   Nov 25 21:16:37.470 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.470 [3144]: Request (file descriptor 5): GET http://ctldl.windowsupdate.com/ HTTP/1.1
CONNECT   Nov 25 21:16:37.478 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.479 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1
CONNECT   Nov 25 21:16:37.488 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.489 [3144]: Request (file descriptor 5): CONNECT quay.io:8443 HTTP/1.1
CONNECT   Nov 25 21:16:37.498 [3144]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:37.498 [3144]: Request (file descriptor 5): CONNECT refused.example:443 HTTP/1.1
NOTICE    Nov 25 21:16:37.499 [3144]: Proxying refused on filtered domain "refused.example"
CONNECT   Nov 25 21:16:37.507 [3144]: Connect (file descriptor 5): 127.10.0.8
CONNECT   Nov 25 21:16:37.507 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1
CONNECT   Nov 25 21:16:37.507 [3144]: Established connection to host "quay.io" using file descriptor 6.
CONNECT   Nov 25 21:16:37.508 [3144]: Connect (file descriptor 7): 127.10.0.7
CONNECT   Nov 25 21:16:37.508 [3144]: Request (file descriptor 7): CONNECT quay.io:443 HTTP/1.1
CONNECT   Nov 25 21:16:37.508 [3144]: Established connection to host "quay.io" using file descriptor 8.
"""

# The same tinyproxy, LogLevel Info, refused.example resolving to a loopback address nothing
# listens on: a CONNECT and a GET whose origin refused the connection (tinyproxy answered 500).
UNREACHABLE = """\
CONNECT   Nov 25 21:16:49.744 [3285]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:49.744 [3285]: Request (file descriptor 5): CONNECT refused.example:443 HTTP/1.1
INFO      Nov 25 21:16:49.745 [3285]: opensock: opening connection to refused.example:443
INFO      Nov 25 21:16:49.745 [3285]: opensock: getaddrinfo returned for refused.example:443
INFO      Nov 25 21:16:49.745 [3285]: Bound to 127.77.0.3
ERROR     Nov 25 21:16:49.745 [3285]: opensock: Could not establish a connection to refused.example:443
CONNECT   Nov 25 21:16:49.751 [3285]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:16:49.752 [3285]: Request (file descriptor 5): GET http://refused.example/x HTTP/1.1
INFO      Nov 25 21:16:49.752 [3285]: opensock: opening connection to refused.example:80
INFO      Nov 25 21:16:49.752 [3285]: opensock: getaddrinfo returned for refused.example:80
INFO      Nov 25 21:16:49.752 [3285]: Bound to 127.77.0.3
ERROR     Nov 25 21:16:49.752 [3285]: opensock: Could not establish a connection to refused.example:80
"""

# The same tinyproxy, LogLevel Connect, `FilterURLs On` (the filter matches whole URLs; a CONNECT's
# is its host:port): a filtered CONNECT and a filtered GET.
FILTERED_URLS = """\
CONNECT   Nov 25 21:23:33.389 [9962]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:23:33.390 [9962]: Request (file descriptor 5): CONNECT evil.example:443 HTTP/1.1
NOTICE    Nov 25 21:23:33.390 [9962]: Proxying refused on filtered url "evil.example:443"
CONNECT   Nov 25 21:23:33.396 [9962]: Connect (file descriptor 5): 127.0.0.1
CONNECT   Nov 25 21:23:33.396 [9962]: Request (file descriptor 5): GET http://evil.example/x?token=1 HTTP/1.1
NOTICE    Nov 25 21:23:33.397 [9962]: Proxying refused on filtered url "http://evil.example/x?token=1"
NOTICE    Nov 25 21:23:33.401 [9962]: Shutting down.
"""

NOW = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


def _read(text: str, now: dt.datetime = NOW) -> list[dict[str, Any]]:
    reader = TinyproxyReader(now, dt.UTC)
    records = []
    for line in text.splitlines():
        fed = reader.feed(line)
        assert fed is not None, line
        records.extend(fed)
    return records + reader.finish()


def _summary(record: dict[str, Any]) -> tuple[object, ...]:
    return (record["client"], record["kind"], record["host"], record["port"], record["origin_connected"],
            record["error"])


def test_each_request_is_a_record_with_what_tinyproxy_logged_of_it_and_never_a_status() -> None:
    records = _read(INFO_LEVEL)
    assert [_summary(r) for r in records] == [
        ("127.0.0.1", "connect", "quay.io", 443, True, None),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, True, None),
        ("127.0.0.1", "connect", "evil.example", 443, False, "refused: filtered domain"),
        ("127.0.0.1", "request", "evil.example", 80, False, "refused: filtered domain"),
        ("127.0.0.1", "connect", "quay.io", 8443, False, "refused: CONNECT to port 8443 not allowed"),
        ("127.0.0.1", "connect", "nowhere.example", 443, False, "name lookup failed: Name or service not known"),
        ("127.0.0.1", "request", "nowhere.example", 80, False, "name lookup failed: Name or service not known"),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, True, None),
    ]
    assert all(r["status"] is None and r["format"] == "tinyproxy" for r in records)
    tunnel, plain = records[0], records[1]
    assert (tunnel["method"], tunnel["connect_target"], tunnel["intercepted"]) == ("CONNECT", "quay.io:443", False)
    assert tunnel["time"] == "2026-11-25T21:16:15.537000+00:00"  # the request line's, in the year before NOW
    assert (plain["method"], plain["scheme"], plain["intercepted"]) == ("GET", "http", True)
    assert plain["path"] == "/msdownload/update/v3/static/trustedr/en/authrootstl.cab?x=1"


def test_at_level_connect_what_is_not_logged_stays_unknown_and_concurrent_clients_stay_apart() -> None:
    records = _read(CONNECT_LEVEL)
    assert [_summary(r) for r in records] == [
        ("127.0.0.1", "connect", "quay.io", 443, True, None),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, True, None),
        ("127.0.0.1", "request", "ctldl.windowsupdate.com", 80, False, None),  # 401: not logged
        ("127.0.0.1", "connect", "quay.io", 443, False, None),  # 407: not logged
        ("127.0.0.1", "connect", "quay.io", 8443, False, None),  # its refusal is an INFO line
        ("127.0.0.1", "connect", "refused.example", 443, False, "refused: filtered domain"),
        ("127.10.0.8", "connect", "quay.io", 443, True, None),
        ("127.10.0.7", "connect", "quay.io", 443, True, None),
    ]


def test_an_origin_that_refused_the_connection_is_named() -> None:
    assert [_summary(r) for r in _read(UNREACHABLE)] == [
        ("127.0.0.1", "connect", "refused.example", 443, False, "could not connect to the origin"),
        ("127.0.0.1", "request", "refused.example", 80, False, "could not connect to the origin"),
    ]


def test_a_filtered_url_is_matched_to_its_request() -> None:
    assert [_summary(r) for r in _read(FILTERED_URLS)] == [
        ("127.0.0.1", "connect", "evil.example", 443, False, "refused: filtered url"),
        ("127.0.0.1", "request", "evil.example", 80, False, "refused: filtered url"),
    ]


def test_records_keep_their_positions_as_the_log_grows() -> None:
    # A reader reads the log again from the start each time: a record must not move (the judge's
    # marks are positions), even when a later line completes it.
    lines = CONNECT_LEVEL.splitlines()
    cut = next(i for i, line in enumerate(lines) if "Request (file descriptor 7)" in line) + 1
    early, full = _read("\n".join(lines[:cut])), _read(CONNECT_LEVEL)
    assert [(r["client"], r["time"]) for r in early] == [(r["client"], r["time"]) for r in full[:len(early)]]
    assert early[-1]["origin_connected"] is False and full[len(early) - 1]["origin_connected"] is True


def test_a_log_that_begins_mid_connection_or_after_a_restart_names_no_one_wrongly() -> None:
    text = ("CONNECT   Nov 25 21:16:15.537 [100]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1\n"
            "CONNECT   Nov 25 21:16:15.540 [100]: Connect (file descriptor 6): 127.10.0.1\n"
            "CONNECT   Nov 25 21:16:15.541 [100]: Request (file descriptor 6): CONNECT quay.io:443 HTTP/1.1\n"
            # a new process: fd 6 of the old one is not this one's
            "CONNECT   Nov 25 21:17:00.000 [200]: Request (file descriptor 6): GET http://x.example/ HTTP/1.1\n"
            "CONNECT   Nov 25 21:17:00.001 [200]: Established connection to host \"quay.io\" using file descriptor 7.\n")
    records = _read(text)
    assert [(r["client"], r["host"], r["origin_connected"]) for r in records] == [("127.10.0.1", "quay.io", False)]


def test_lines_that_are_not_tinyproxys_are_not_taken() -> None:
    reader = TinyproxyReader(NOW, dt.UTC)
    for line in ("1795641499.998 4 127.0.0.1 TCP_TUNNEL/200 2089 CONNECT quay.io:443 - HIER_DIRECT/127.77.0.11 -",
                 '127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126', ""):
        assert reader.feed(line) is None
    # tinyproxy's own request for its stathost, or a line it could not parse, is its line but no flow
    assert reader.feed("CONNECT   Nov 25 21:16:15.537 [1]: Connect (file descriptor 5): 127.0.0.1") == []
    assert reader.feed("CONNECT   Nov 25 21:16:15.537 [1]: Request (file descriptor 5): GET /stats HTTP/1.1") == []


def test_a_log_read_in_january_keeps_decembers_year() -> None:
    records = _read(UNREACHABLE, now=dt.datetime(2027, 1, 1, 0, 5, tzinfo=dt.UTC))
    assert records[0]["time"].startswith("2026-11-25T21:16:49")
