"""Basic proxy authentication from a file: the password may hold ':' (RFC 7617; mitmproxy's own
proxyauth cannot take one), a CONNECT authenticates its tunnel, a plain request itself, and the
accepted header never goes upstream."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons, tflow

from proxyfleet.simulators.proxy.authentication import (
    ProxyAuthentication,
    basic_credentials,
    matches,
    parse_credentials,
)


def _basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


def test_credentials_split_at_the_first_colon() -> None:
    assert parse_credentials("svc proxy:p@ss:w0rd/$(x)'\n") == (b"svc proxy", b"p@ss:w0rd/$(x)'")
    assert parse_credentials("u:") == (b"u", b"")
    for bad in ("no-colon", ":only-a-password"):
        with pytest.raises(ValueError, match="user:password"):
            parse_credentials(bad)
    assert basic_credentials(_basic("u:a:b")) == (b"u", b"a:b")
    assert basic_credentials("Bearer x") is None and basic_credentials("Basic !!!") is None
    assert basic_credentials(_basic("no-colon")) is None
    expected = parse_credentials("u:a:b")
    assert matches(expected, _basic("u:a:b")) and not matches(expected, _basic("u:a")) and not matches(expected, "")


def _flow(method: str = "CONNECT") -> http.HTTPFlow:
    flow = tflow.tflow()
    flow.request.method = method
    return flow


def test_a_connect_authenticates_its_tunnel_and_the_header_goes_no_further(tmp_path: Path) -> None:
    auth = ProxyAuthentication()
    path = tmp_path / "auth"
    path.write_text("o'brien:pa$(x):y\n")
    with taddons.context(auth) as context:
        context.configure(auth, lab_auth_file=str(path))
        missing = _flow()
        auth.http_connect(missing)
        assert missing.response is not None and missing.response.status_code == 407
        assert missing.response.headers["Proxy-Authenticate"] == 'Basic realm="proxyfleet"'
        wrong = _flow()
        wrong.request.headers["Proxy-Authorization"] = _basic("o'brien:pa$(x)")
        auth.http_connect(wrong)
        assert wrong.response is not None and wrong.response.status_code == 407
        right = _flow()
        right.request.headers["Proxy-Authorization"] = _basic("o'brien:pa$(x):y")
        auth.http_connect(right)
        assert right.response is None and "Proxy-Authorization" not in right.request.headers
        inside = _flow("GET")  # a request inside that tunnel: authenticated by its CONNECT
        inside.client_conn = right.client_conn
        auth.requestheaders(inside)
        assert inside.response is None
        auth.client_disconnected(right.client_conn)
        again = _flow("GET")  # a plain request on a new connection authenticates itself
        again.client_conn = right.client_conn
        auth.requestheaders(again)
        assert again.response is not None and again.response.status_code == 407


def test_a_malformed_file_is_refused_as_an_option(tmp_path: Path) -> None:
    auth = ProxyAuthentication()
    bad = tmp_path / "bad"
    bad.write_text("no-colon-here\n")
    with taddons.context(auth) as context, pytest.raises(exceptions.OptionsError, match="user:password"):
        context.configure(auth, lab_auth_file=str(bad))
