"""curl on any node kind: its options with its own usage errors, ``--`` ending them, --write-out,
its failures in its TLS library's words — OpenSSL's compared with Debian's real curl against the
same local servers — and the proxy variables it reads (lower-case ``http_proxy`` only)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import trustme

from proxyfleet.simulators.egress.client import EgressError, trust_context
from proxyfleet.simulators.egress.curl import (
    LINUX_CURL,
    OPENSSL,
    SCHANNEL,
    CurlInvocation,
    CurlUsage,
    curl_failure,
    parse_curl_arguments,
    run_curl,
    write_out,
)
from proxyfleet.simulators.egress.records import EgressRecord
from proxyfleet.simulators.network import Endpoint, LabNetwork

HAVE_CURL = shutil.which("curl") is not None


def test_curl_options_short_long_and_bundled() -> None:
    options, urls = parse_curl_arguments(["-sSf", "-o", "NUL", "-w%{http_code}", "--noproxy", "*",
                                          "-H", "A: b", "--header", "C: d", "https://quay.io/v2/"])
    assert urls == ["https://quay.io/v2/"]
    assert options["silent"] and options["show-error"] and options["fail"]
    assert (options["output"], options["write-out"], options["noproxy"]) == ("NUL", "%{http_code}", "*")
    assert options["header"] == ["A: b", "C: d"]


@pytest.mark.parametrize(("args", "message"), [
    (["--bogus"], "option --bogus: is unknown"), (["-Z"], "option -Z: is unknown"),
    (["-o"], "option -o: requires parameter"), (["--proxy"], "option --proxy: requires parameter"),
])
def test_curl_usage_errors_in_curls_words(args: list[str], message: str) -> None:
    with pytest.raises(CurlUsage, match=message):
        parse_curl_arguments(args)


def test_double_dash_ends_curls_options() -> None:
    options, urls = parse_curl_arguments(["-sS", "--", "-x", "http://a.example/"])
    assert urls == ["-x", "http://a.example/"] and "proxy" not in options  # every later word is a URL


def test_write_out_fills_known_variables_and_escapes() -> None:
    assert write_out("%{http_code}\\n%{unknown}", {"http_code": 200}) == "200\n"


def test_a_failed_tls_to_an_https_proxy_names_the_proxy() -> None:
    error = EgressError("proxy-tls-unknown-authority", "self-signed")
    code, text = curl_failure(error, "quay.io", 443, "https://proxy.corp.internal:3128", SCHANNEL)
    assert code == 60 and "SEC_E_UNTRUSTED_ROOT" in text
    wrong_name = EgressError("proxy-tls-hostname", "mismatch")
    assert curl_failure(wrong_name, "quay.io", 443, "https://proxy.corp.internal:3128", OPENSSL) == (
        60, "SSL: no alternative certificate subject name matches target host name 'proxy.corp.internal'")


# --- against real servers, beside Debian's curl --------------------------------------------------


def _serve(listener: socket.socket, handle: Any) -> None:
    def loop() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(connection,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def _reset(connection: socket.socket) -> None:
    connection.recv(100)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[int, int, trustme.CA]]:
    """(a port that resets every connection, a TLS port serving origin.example, its CA)."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("origin.example").configure_cert(context)

    def tls(connection: socket.socket) -> None:
        try:
            with context.wrap_socket(connection, server_side=True) as wrapped:
                wrapped.recv(1000)
                wrapped.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except (OSError, ssl.SSLError):
            pass

    listeners = []
    for handle in (_reset, tls):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        _serve(listener, handle)
        listeners.append(listener)
    yield listeners[0].getsockname()[1], listeners[1].getsockname()[1], ca
    for listener in listeners:
        listener.close()


def _invocation(network: LabNetwork, environment: dict[str, str], trust: ssl.SSLContext,
                records: list[EgressRecord]) -> CurlInvocation:
    def no_files(name: str) -> bytes:
        raise OSError(name)

    def no_writes(name: str, data: bytes) -> None:
        raise OSError(name)

    return CurlInvocation(LINUX_CURL, environment, trust, network, "127.0.0.1",
                          {"client": "curl", "recorder": records.append, "session": 0}, no_files, no_writes)


@pytest.mark.skipif(not HAVE_CURL, reason="needs curl (Debian's, built with OpenSSL)")
@pytest.mark.parametrize("case", ["reset-tls", "reset-http", "untrusted", "wrong-name"])
async def test_failures_read_as_debians_curl_says_them(servers: tuple[int, int, trustme.CA], case: str) -> None:
    reset_port, tls_port, ca = servers
    network = LabNetwork()
    network.add("reset.example", 443, Endpoint("127.0.0.1", reset_port), "origin")
    network.add("reset.example", 80, Endpoint("127.0.0.1", reset_port), "origin")
    network.add("origin.example", 443, Endpoint("127.0.0.1", tls_port), "origin")
    network.add("other.example", 443, Endpoint("127.0.0.1", tls_port), "origin")
    url, port, trusted = {"reset-tls": ("https://reset.example/", reset_port, True),
                          "reset-http": ("http://reset.example/", reset_port, True),
                          "untrusted": ("https://origin.example/", tls_port, False),
                          "wrong-name": ("https://other.example/", tls_port, True)}[case]
    host = url.split("/")[2]
    real_port = 443 if url.startswith("https") else 80
    argv = ["curl", "-sS", "--resolve", f"{host}:{real_port}:127.0.0.1", "--connect-to",
            f"{host}:{real_port}:127.0.0.1:{port}", url]
    if trusted:
        argv[1:1] = ["--cacert", "/dev/stdin"]
    real = await asyncio.to_thread(_run, argv, ca.cert_pem.bytes())
    records: list[EgressRecord] = []
    trust = trust_context([ssl.PEM_cert_to_DER_cert(ca.cert_pem.bytes().decode())] if trusted else [])
    ours = await run_curl(["-sS", url], _invocation(network, {}, trust, records))
    assert (ours[2], ours[1]) == real
    assert len(records) == 1 and records[0].error_kind is not None  # the lab's evidence of the failure


def _run(argv: list[str], stdin: bytes) -> tuple[int, str]:
    import subprocess

    done = subprocess.run(argv, input=stdin, capture_output=True, timeout=60, check=False)
    return done.returncode, done.stderr.decode()


async def test_http_proxy_is_read_in_lower_case_only_and_https_proxy_in_either() -> None:
    network = LabNetwork()  # no route anywhere: the proxy's name is what the failure names
    upper = await run_curl(["-sS", "http://a.example/"],
                           _invocation(network, {"HTTP_PROXY": "http://proxy.corp:3128"}, trust_context([]), []))
    assert upper[1] == "curl: (6) Could not resolve host: a.example\n"  # HTTP_PROXY ignored: direct
    lower = await run_curl(["-sS", "http://a.example/"],
                           _invocation(network, {"http_proxy": "http://proxy.corp:3128"}, trust_context([]), []))
    assert lower[1] == "curl: (5) Could not resolve proxy: proxy.corp\n"
    https = await run_curl(["-sS", "https://a.example/"],
                           _invocation(network, {"HTTPS_PROXY": "http://proxy.corp:3128"}, trust_context([]), []))
    assert https[1] == "curl: (5) Could not resolve proxy: proxy.corp\n"
    explicit = await run_curl(["-sS", "-x", "http://other.proxy:8080", "--noproxy", "a.example", "https://a.example/"],
                              _invocation(network, {"HTTPS_PROXY": "http://proxy.corp:3128"}, trust_context([]), []))
    assert explicit[1] == "curl: (6) Could not resolve host: a.example\n"  # --noproxy wins over -x
