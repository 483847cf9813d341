"""Flow records built from what a log line names: a CONNECT's host:port or an absolute URL, never
a credential, never an origin-form path."""

import datetime as dt

import pytest

from proxyfleet.harness.lab.flowrecords import LogLineError, authority, flow_record

WHEN = dt.datetime(2026, 11, 25, 21, 0, tzinfo=dt.UTC)


def test_authorities() -> None:
    assert authority("Quay.IO:443") == ("quay.io", 443)
    assert authority("[::1]:8443") == ("::1", 8443)
    for text in ("quay.io", "quay.io:", "quay.io:x", "::1:443", "quay.io:0", "quay.io:70000", "a/b:443",
                 "alice@quay.io:443"):
        with pytest.raises(LogLineError):
            authority(text)


def test_a_connect_and_a_request_have_the_flow_log_shape() -> None:
    tunnel = flow_record("squid", time=WHEN, client="10.0.0.5", method="CONNECT", target="quay.io:443", status=200)
    assert tunnel == {"time": "2026-11-25T21:00:00+00:00", "client": "10.0.0.5", "client_port": None,
                      "method": "CONNECT", "status": 200, "error": None, "format": "squid", "kind": "connect",
                      "connect_target": "quay.io:443", "scheme": None, "host": "quay.io", "port": 443, "path": None,
                      "intercepted": False}
    bumped = flow_record("x", time=None, client="10.0.0.5", method="GET", target="HTTPS://Quay.io/v2/?a=1", status=401,
                         error="TCP_DENIED")
    assert (bumped["kind"], bumped["scheme"], bumped["host"], bumped["port"], bumped["path"]) == \
        ("request", "https", "quay.io", 443, "/v2/?a=1")
    assert (bumped["connect_target"], bumped["intercepted"], bumped["time"], bumped["error"]) == \
        ("quay.io:443", True, None, "TCP_DENIED")


def test_credentials_in_a_url_never_reach_the_record() -> None:
    record = flow_record("x", time=WHEN, client="c", method="GET", target="http://alice:s3cret@example.com:8080/",
                         status=200)
    assert (record["host"], record["port"], record["path"]) == ("example.com", 8080, "/")
    assert "s3cret" not in str(record) and "alice" not in str(record)


@pytest.mark.parametrize(("method", "target"), [
    ("GET", "/relative"), ("GET", "http:///nohost"), ("GET", "http://[::1/"), ("GET", "http://h:99999/"),
    ("CONNECT", "quay.io"), (None, "quay.io"),
])
def test_targets_that_name_no_destination_are_rejected(method: str | None, target: str) -> None:
    with pytest.raises(LogLineError):
        flow_record("x", time=WHEN, client="c", method=method, target=target, status=None)
