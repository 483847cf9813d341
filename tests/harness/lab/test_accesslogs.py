"""A proxy's access log in any format it writes, read as flow records (each line by the first
format that reads it, the rest counted), from a file only safely, and summed up for a report."""

import datetime as dt
import os
from pathlib import Path

import pytest

from proxyfleet.harness.lab.accesslogs import (
    AUTO,
    NAMED,
    LogFormatError,
    check_format,
    describe_flows,
    read_file,
    read_lines,
)

# Real lines (see each format's own tests for the versions and configurations that wrote them).
SQUID = "1795641499.998      4 127.0.0.1 TCP_TUNNEL/200 2089 CONNECT quay.io:443 - HIER_DIRECT/127.77.0.11 -"
SQUID_ALICE = "1795641501.492      7 127.0.0.1 TCP_DENIED/407 3580 CONNECT auth.example:443 alice HIER_NONE/- text/html"
TRAFFICSERVER = "1795641477.467 36 127.0.0.1 TCP_MISS/200 2260 CONNECT quay.io:443/ - DIRECT/quay.io -"
APACHE = '127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126 "-" "curl/7.88.1"'
APACHE_GET = ('127.0.0.1 - - [25/Nov/2026:21:17:27 +0000] "GET http://ctldl.windowsupdate.com/msdownload/update/v3/'
              'static/trustedr/en/authrootstl.cab?x=1 HTTP/1.1" 200 143 "-" "curl/7.88.1"')
TINYPROXY = [  # tinyproxy 1.11.1, LogLevel Connect
    "CONNECT   Nov 25 21:16:37.449 [3144]: Connect (file descriptor 5): 127.0.0.1",
    "CONNECT   Nov 25 21:16:37.449 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1",
    'CONNECT   Nov 25 21:16:37.449 [3144]: Established connection to host "quay.io" using file descriptor 6.',
]
NOW = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


def test_auto_reads_each_line_by_the_first_format_that_reads_it_and_counts_the_rest() -> None:
    log = read_lines([SQUID, "", '{"json": "line"}', TRAFFICSERVER, APACHE, *TINYPROXY, "garbage"], now=NOW, zone=dt.UTC)
    assert [(r["format"], r["kind"], r["host"], r["port"]) for r in log.records] == [
        ("squid", "connect", "quay.io", 443), ("trafficserver", "connect", "quay.io", 443),
        ("combined", "connect", "quay.io", 443), ("tinyproxy", "connect", "quay.io", 443)]
    assert log.skipped == 2  # the JSON line and the garbage; blank lines are not counted
    assert log.records[-1]["origin_connected"] is True  # completed by the line after its request


@pytest.mark.parametrize(("log_format", "read"), [
    ("squid", [SQUID]), ("trafficserver", [SQUID, TRAFFICSERVER]), ("combined", [APACHE]),
    ("tinyproxy", [TINYPROXY[1]]),
])
def test_a_named_format_reads_only_its_own_lines(log_format: str, read: list[str]) -> None:
    log = read_lines([SQUID, TRAFFICSERVER, APACHE, *TINYPROXY], log_format, now=NOW, zone=dt.UTC)
    assert len(log.records) == len(read)
    assert all(r["format"] == log_format for r in log.records)
    assert log.skipped == (6 - len(read) if log_format != "tinyproxy" else 3)  # of 6 lines


def test_a_regular_expression_is_a_format() -> None:
    log = read_lines([APACHE, SQUID], r'(?P<client>\S+) - - \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<target>\S+) .*')
    assert [(r["format"], r["host"], r["time"]) for r in log.records] == [
        ("custom", "quay.io", "2026-11-25T21:17:27+00:00")]
    assert log.skipped == 1


def test_formats_are_checked_when_given() -> None:
    for name in (AUTO, *NAMED):
        assert check_format(name) == name
    assert check_format(r"(?P<client>\S+) (?P<host>\S+)") == r"(?P<client>\S+) (?P<host>\S+)"
    with pytest.raises(LogFormatError, match=r"no \(\?P<client>…\) group.*\(or one of auto, squid, trafficserver, "
                                             r"combined, tinyproxy\)"):
        check_format("sqiud")
    with pytest.raises(LogFormatError):
        read_lines([SQUID], "(?P<client>")


def test_a_log_file_that_is_a_link_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "access.log").write_text(APACHE + "\n")
    assert [r["host"] for r in read_file(tmp_path / "access.log", "combined").records] == ["quay.io"]
    assert read_file(tmp_path / "access.log", "squid").skipped == 1
    assert read_file(None).records == [] and read_file(tmp_path / "missing.log").records == []
    secret = tmp_path / "root-only.log"
    secret.write_text(SQUID + "\n")
    (tmp_path / "linked.log").symlink_to(secret)  # what a proxy could plant where its log should be
    assert read_file(tmp_path / "linked.log").records == []
    os.mkfifo(tmp_path / "fifo.log")  # opening it to read would block forever
    assert read_file(tmp_path / "fifo.log").records == []


def test_describe_flows_says_what_the_proxy_logged_in_one_line() -> None:
    def described(*lines: str, log_format: str = AUTO) -> str:
        return describe_flows(read_lines(lines, log_format, now=NOW, zone=dt.UTC).records)

    assert described(SQUID) == "the proxy logged CONNECT quay.io:443 → 200 (TCP_TUNNEL)"
    assert described(APACHE_GET) == ("the proxy logged GET http://ctldl.windowsupdate.com/msdownload/update/v3/static/"
                                     "trustedr/en/authrootstl.cab?… → 200")  # a query may carry a token
    assert described(*TINYPROXY) == "the proxy logged CONNECT quay.io:443 → connected to the origin"
    assert described(*TINYPROXY[:2]) == "the proxy logged CONNECT quay.io:443 → no connection to the origin logged"
    assert described(SQUID_ALICE, SQUID, SQUID) == ("the proxy logged CONNECT auth.example:443 → 407 (TCP_DENIED); "
                                                    "CONNECT quay.io:443 → 200 (TCP_TUNNEL), 2 times")
    assert "alice" not in described(SQUID_ALICE)
    assert describe_flows([]) == "the proxy logged nothing for it"


def test_describe_flows_shows_a_few_and_nothing_a_terminal_would_run() -> None:
    records = [{"kind": "request", "method": "GET", "scheme": "http", "host": f"h{i}.example", "port": 80,
                "path": "/", "status": 200} for i in range(5)]
    assert describe_flows(records).endswith("GET http://h2.example/ → 200; and 2 more")
    hostile = {"kind": "request", "method": "GET", "scheme": "http", "host": "x\x1b[2J.example", "port": 8080,
               "path": "/" + "a" * 100, "status": None, "error": "connection refused"}
    text = describe_flows([hostile])
    assert "\x1b" not in text and "\\x1b[2J" in text and "a" * 61 not in text
    assert text.endswith(":8080/" + "a" * 59 + "… → connection refused (no status logged)")
    mitmdump = {"kind": "connect", "method": "CONNECT", "host": "::1", "port": 443, "status": 502,
                "error": "connection refused"}
    assert describe_flows([mitmdump]) == "the proxy logged CONNECT [::1]:443 → 502 (connection refused)"
