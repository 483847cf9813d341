"""Proxy Basic authentication for the lab's and the run's mitmdump, from a file.

mitmproxy's own ``proxyauth`` takes ``user:password`` on its command line (every local user
reads it) and splits both its option and the client's header at *every* ``:``, so a password
holding one — RFC 7617 allows it; only the user-id may not — can never authenticate. This addon
reads ``user:password`` from ``lab_auth_file`` (0600) and splits at the first ``:``, as the
clients that send it do. Like mitmproxy's: a CONNECT authenticates its connection for the
requests inside the tunnel, an absolute-form request authenticates itself, a missing or wrong
``Proxy-Authorization`` gets ``407`` with ``Proxy-Authenticate: Basic``, and an accepted header
is removed before the request goes on.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from pathlib import Path
from typing import Any

from mitmproxy import ctx, exceptions, http
from mitmproxy.connection import Client

REALM = "proxyfleet"


def parse_credentials(text: str) -> tuple[bytes, bytes]:
    """``user:password`` (the password may hold ``:``) as UTF-8 bytes; ValueError without a user."""
    user, colon, password = text.strip().partition(":")
    if not colon or not user:
        raise ValueError("expected 'user:password'")
    return user.encode(), password.encode()


def basic_credentials(header: str) -> tuple[bytes, bytes] | None:
    """The (user, password) of a ``Basic`` authorization header, or None if it is not one."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    return (user, password) if colon else None


def matches(expected: tuple[bytes, bytes], header: str) -> bool:
    """Whether ``header`` carries exactly ``expected``, compared in constant time."""
    given = basic_credentials(header)
    if given is None:
        return False
    same_user = hmac.compare_digest(given[0], expected[0])
    same_password = hmac.compare_digest(given[1], expected[1])
    return same_user and same_password


class ProxyAuthentication:
    """Basic proxy authentication against ``lab_auth_file``."""

    def __init__(self) -> None:
        self._expected: tuple[bytes, bytes] | None = None
        self._authenticated: set[str] = set()  # client connection ids with an accepted CONNECT

    def load(self, loader: Any) -> None:
        loader.add_option("lab_auth_file", str, "", "File holding 'user:password' the clients must send.")

    def configure(self, updated: set[str]) -> None:
        if "lab_auth_file" not in updated:
            return
        if not ctx.options.lab_auth_file:
            self._expected = None
            return
        try:
            self._expected = parse_credentials(Path(ctx.options.lab_auth_file).read_text())
        except (OSError, ValueError) as exc:
            # OptionsError, not ValueError: it rejects the option itself. (At start-up mitmdump
            # exits on either; set at run time, another error would only be logged.)
            raise exceptions.OptionsError(f"lab_auth_file: {exc}") from None  # type: ignore[no-untyped-call]

    def _check(self, flow: http.HTTPFlow) -> bool:
        assert self._expected is not None
        if matches(self._expected, flow.request.headers.get("Proxy-Authorization", "")):
            del flow.request.headers["Proxy-Authorization"]  # never forwarded upstream
            return True
        flow.response = http.Response.make(
            407, b"proxyfleet proxy: proxy authentication required\n",
            {"Proxy-Authenticate": f'Basic realm="{REALM}"', "Content-Type": "text/plain"})
        return False

    def http_connect(self, flow: http.HTTPFlow) -> None:
        if self._expected is not None and self._check(flow):
            self._authenticated.add(flow.client_conn.id)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if self._expected is None or flow.client_conn.id in self._authenticated or flow.is_replay:
            return
        self._check(flow)

    def client_disconnected(self, client: Client) -> None:
        self._authenticated.discard(client.id)
