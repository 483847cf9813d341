"""Squid's native access log read as flow records: tunnels, requests it read itself, refusals."""

from pathlib import Path

import pytest

from proxyfleet.harness.lab.squidlog import SquidLogError, parse_native, read_native, read_native_file

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


def test_a_log_skips_what_is_not_native() -> None:
    records = read_native([TUNNEL, "", '{"json": "line"}', PLAIN])
    assert [r["kind"] for r in records] == ["connect", "request"]


def test_a_log_file_that_is_a_link_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    import os

    line = "1732540000.123 12 127.10.0.1 TCP_TUNNEL/200 4321 CONNECT quay.io:443 - HIER_DIRECT/127.30.0.5 -\n"
    (tmp_path / "access.log").write_text(line)
    assert [r["host"] for r in read_native_file(tmp_path / "access.log")] == ["quay.io"]
    secret = tmp_path / "root-only.log"
    secret.write_text(line)
    (tmp_path / "linked.log").symlink_to(secret)  # what a proxy could plant where its log should be
    assert read_native_file(tmp_path / "linked.log") == []
    os.mkfifo(tmp_path / "fifo.log")  # opening it to read would block forever
    assert read_native_file(tmp_path / "fifo.log") == []
