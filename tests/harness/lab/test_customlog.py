"""A user's own log format: a regular expression with named groups, checked when given (one line
saying what is wrong), each matching line read as a flow record."""

import datetime as dt

import pytest

from proxyfleet.harness.lab.customlog import CustomFormat, LogFormatError
from proxyfleet.harness.lab.flowrecords import LogLineError

# nginx 1.22.1 (Debian bookworm), `access_log ... combined`, as a forward proxy for plain HTTP.
NGINX = ('127.0.0.1 - - [25/Nov/2026:21:17:42 +0000] "GET http://ctldl.windowsupdate.com/msdownload/x.cab?y=1 '
         'HTTP/1.1" 200 6 "-" "curl/7.88.1"')
NGINX_FORMAT = r'(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<target>\S+) [^"]*" (?P<status>\d+) .*'


def test_a_users_expression_reads_a_real_line() -> None:
    record = CustomFormat.from_text(NGINX_FORMAT).parse(NGINX)
    assert (record["client"], record["kind"], record["method"], record["host"], record["port"], record["status"]) == \
        ("127.0.0.1", "request", "GET", "ctldl.windowsupdate.com", 80, 200)
    assert record["time"] == "2026-11-25T21:17:42+00:00" and record["format"] == "custom"
    assert record["path"] == "/msdownload/x.cab?y=1" and record["scheme"] == "http"


def test_host_port_and_path_groups_say_only_what_was_logged() -> None:
    log_format = CustomFormat.from_text(r"(?P<time>\S+) (?P<client>\S+) (?P<method>\S+) (?P<host>[^ :/]+)"
                                        r"(?::(?P<port>\d+))?(?P<path>/\S*)? (?P<status>\S+)", zone=dt.UTC)
    tunnel = log_format.parse("2026-11-25T21:00:00 10.0.0.5 CONNECT quay.io:443 200")
    assert (tunnel["kind"], tunnel["connect_target"], tunnel["status"]) == ("connect", "quay.io:443", 200)
    assert tunnel["time"] == "2026-11-25T21:00:00+00:00"  # no offset: in the zone given
    plain = log_format.parse("1795641477.467 10.0.0.5 GET ctldl.windowsupdate.com/x.cab -")
    # no scheme and no port were logged: neither is made up
    assert (plain["kind"], plain["scheme"], plain["port"], plain["path"], plain["status"]) == \
        ("request", None, None, "/x.cab", None)
    assert plain["time"] == "2026-11-25T21:17:57.467000+00:00"
    with pytest.raises(LogLineError, match="without a port"):
        log_format.parse("1795641477.467 10.0.0.5 CONNECT quay.io 200")


def test_a_target_without_a_method_is_a_connect_when_it_is_host_port() -> None:
    log_format = CustomFormat.from_text(r"(?P<client>\S+) (?P<target>\S+)")
    assert log_format.parse("10.0.0.5 quay.io:443")["kind"] == "connect"
    record = log_format.parse("10.0.0.5 http://alice:secret@ctldl.windowsupdate.com/")
    assert record["kind"] == "request" and record["time"] is None and record["method"] is None
    assert "secret" not in str(record.values()) and "alice" not in str(record.values())


@pytest.mark.parametrize("line", ["10.0.0.5", "10.0.0.5 /relative", "10.0.0.5 quay.io", "x 10.0.0.5 quay.io:443"])
def test_lines_that_do_not_match_or_read_are_rejected(line: str) -> None:
    with pytest.raises(LogLineError):
        CustomFormat.from_text(r"(?P<client>\S+) (?P<target>\S+)").parse(line)


@pytest.mark.parametrize(("text", "message"), [
    ("(?P<client>\\S+ (?P<target>\\S+)", "not a regular expression: missing ), unterminated subpattern"),
    ("(?P<target>\\S+)", "no (?P<client>…) group"),
    ("(?P<client>\\S+) (?P<method>\\S+)", "needs exactly one of (?P<target>…)"),
    ("(?P<client>\\S+) (?P<target>\\S+) (?P<host>\\S+)", "needs exactly one of (?P<target>…)"),
    ("(?P<client>\\S+) (?P<user>\\S+) (?P<target>\\S+)", "unknown group(s) user"),
    ("(?P<client>\\S+) (?P<target>\\S+) (?P<port>\\d+)", "go with (?P<host>…)"),
])
def test_a_bad_format_is_one_line_saying_why(text: str, message: str) -> None:
    with pytest.raises(LogFormatError) as error:
        CustomFormat.from_text(text)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_value_that_does_not_read_skips_the_line() -> None:
    log_format = CustomFormat.from_text(r"(?P<client>\S+) (?P<time>\S+) (?P<status>\S+) (?P<target>\S+)")
    for line in ("10.0.0.5 yesterday 200 quay.io:443", "10.0.0.5 1795641477 OK quay.io:443"):
        with pytest.raises(LogLineError):
            log_format.parse(line)
