"""The node-side HTTP client on its own, against real local servers: names resolve only through
the lab table, TLS is verified against the given trust, connections are kept alive per route,
plain HTTP through a proxy is sent in absolute form with the proxy's credentials, and each failure
says which step failed."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import trustme
from aiohttp import web
from cryptography import x509

from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
from proxyfleet.simulators.egress.records import EgressRecord
from proxyfleet.simulators.network import Endpoint, LabNetwork


@dataclass
class Seen:
    """What the local servers were sent: (peer port, raw request target, Proxy-Authorization)."""

    requests: list[tuple[int, str, str | None]] = field(default_factory=list)


@dataclass
class Servers:
    network: LabNetwork
    ca: trustme.CA
    seen: Seen


async def _start(app: web.Application, address: str, context: ssl.SSLContext | None = None) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, address, 0, ssl_context=context).start()
    return runner


def _port(runner: web.AppRunner) -> int:
    assert runner.addresses
    return int(runner.addresses[0][1])


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    seen = Seen()

    async def record(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else ("", 0)
        seen.requests.append((peer[1], request.raw_path, request.headers.get("Proxy-Authorization")))
        return web.Response(text=f"hello {request.host}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    ca = trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.example").configure_cert(tls)
    plain_runner = await _start(app, "127.0.0.1")
    tls_runner = await _start(app, "127.0.0.1", tls)
    network = LabNetwork()
    network.add("plain.example", 80, Endpoint("127.0.0.1", _port(plain_runner)), "internet")
    network.add("secure.example", 443, Endpoint("127.0.0.1", _port(tls_runner)), "internet")
    network.add("wrong-name.example", 443, Endpoint("127.0.0.1", _port(tls_runner)), "internet")
    network.add("proxy.example", 3128, Endpoint("127.0.0.1", _port(plain_runner)), "proxy")
    try:
        yield Servers(network, ca, seen)
    finally:
        await plain_runner.cleanup()
        await tls_runner.cleanup()


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    return trust_context([_der(ca)])


def _der(ca: trustme.CA) -> bytes:
    return ssl.PEM_cert_to_DER_cert(ca.cert_pem.bytes().decode())


async def test_direct_requests_reuse_one_connection_per_route(servers: Servers) -> None:
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
        first = await session.request("GET", "http://plain.example/a")
        second = await session.request("GET", "http://plain.example/b?x=1")
    assert (first.status, first.body) == (200, b"hello plain.example")
    assert second.status == 200
    assert [target for _, target, _ in servers.seen.requests] == ["/a", "/b?x=1"]
    assert len({port for port, _, _ in servers.seen.requests}) == 1  # kept alive


async def test_tls_is_verified_against_the_given_trust_only(servers: Servers) -> None:
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
        ok = await session.request("GET", "https://secure.example/")
        assert ok.body == b"hello secure.example"
        with pytest.raises(EgressError) as wrong_name:
            await session.request("GET", "https://wrong-name.example/")
    assert wrong_name.value.kind == "tls-hostname"
    async with EgressSession(servers.network, "127.0.0.1", trust_context([_der(trustme.CA())])) as stranger:
        with pytest.raises(EgressError) as unknown:
            await stranger.request("GET", "https://secure.example/")
    assert unknown.value.kind == "tls-unknown-authority"


async def test_each_handshake_records_who_issued_the_certificate_shown(servers: Servers) -> None:
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
        await session.request("GET", "https://secure.example/")
        await session.request("GET", "http://plain.example/")  # no TLS: nothing recorded
    issuer = x509.load_pem_x509_certificate(servers.ca.cert_pem.bytes()).subject.rfc4514_string()
    assert session.certificates == [("secure.example", issuer)]
    assert not any("issuer" in line for line in session.trace.lines)  # Schannel's -v does not print it


async def test_names_resolve_only_through_the_lab_table(servers: Servers) -> None:
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
        with pytest.raises(EgressError) as unknown:
            await session.request("GET", "http://nothere.example.org/")
        with pytest.raises(EgressError) as no_port:
            await session.request("GET", "http://plain.example:8080/")
        with pytest.raises(EgressError) as scheme:
            await session.request("GET", "ftp://plain.example/")
    assert unknown.value.kind == "dns" and "nothere.example.org" in unknown.value.detail
    assert no_port.value.kind == "refused"
    assert scheme.value.kind == "url"
    assert servers.seen.requests == []  # nothing was sent anywhere


async def test_plain_http_through_a_proxy_is_absolute_form_with_its_credentials(servers: Servers) -> None:
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
        response = await session.request("GET", "http://plain.example/path?q=1",
                                         proxy="http://user:p%40ss@proxy.example:3128")
    assert response.status == 200
    [(_, target, authorization)] = servers.seen.requests
    assert target == "http://plain.example/path?q=1"
    assert authorization == "Basic dXNlcjpwQHNz"  # user:p@ss, percent-decoded
    assert "> GET http://plain.example/path?q=1 HTTP/1.1" in session.trace.lines


async def test_a_refused_connect_reports_the_proxys_status() -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    network = LabNetwork()
    network.add("proxy.example", 3128, Endpoint("127.0.0.1", server.sockets[0].getsockname()[1]), "proxy")
    network.add("secure.example", 443, Endpoint("127.0.0.1", 9), "internet")
    try:
        async with EgressSession(network, "127.0.0.1", trust_context([])) as session:
            with pytest.raises(EgressError) as refused:
                await session.request("GET", "https://secure.example/", proxy="http://proxy.example:3128")
    finally:
        server.close()
        await server.wait_closed()
    assert refused.value.kind == "proxy-status" and refused.value.status == 407
    assert "> CONNECT secure.example:443 HTTP/1.1" in session.trace.lines


async def _tunnel(network: LabNetwork, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A minimal CONNECT proxy (the test's https:// proxy, behind its TLS)."""
    head = await reader.readuntil(b"\r\n\r\n")
    host, port = head.split()[1].decode().rsplit(":", 1)
    route = network.resolve(host, int(port))
    upstream_reader, upstream_writer = await asyncio.open_connection(route.endpoint.address, route.endpoint.port)
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()

    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def test_an_https_proxy_is_verified_then_tunnels_tls_inside_tls(servers: Servers) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    servers.ca.issue_cert("tlsproxy.example").configure_cert(context)
    proxy = await asyncio.start_server(lambda r, w: _tunnel(servers.network, r, w), "127.0.0.1", 0, ssl=context)
    servers.network.add("tlsproxy.example", 3129, Endpoint("127.0.0.1", proxy.sockets[0].getsockname()[1]), "proxy")
    try:
        async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca)) as session:
            response = await session.request("GET", "https://secure.example/x", proxy="https://tlsproxy.example:3129")
        assert (response.status, response.body) == (200, b"hello secure.example")
        # two handshakes: the proxy's own certificate, then the origin's inside the tunnel
        assert [name for name, _ in session.certificates] == ["tlsproxy.example", "secure.example"]
        async with EgressSession(servers.network, "127.0.0.1", trust_context([_der(trustme.CA())])) as stranger:
            with pytest.raises(EgressError) as untrusted:
                await stranger.request("GET", "https://secure.example/", proxy="https://tlsproxy.example:3129")
        assert untrusted.value.kind == "proxy-tls-unknown-authority"
    finally:
        proxy.close()


async def test_every_request_is_recorded_as_the_client_saw_it(servers: Servers) -> None:
    """Direct, absolute-form through a proxy, and a CONNECT a proxy refused with the schemes it
    offered: the lab's evidence of each route, no credential in it."""
    records: list[EgressRecord] = []
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca), client="curl",
                             recorder=records.append, session=3) as session:
        await session.request("GET", "https://secure.example/a")
        await session.request("GET", "https://secure.example/b")  # the kept connection: the same route
        await session.request("GET", "http://plain.example/c", proxy="http://user:p%40ss@proxy.example:3128")
    issuer = x509.load_pem_x509_certificate(servers.ca.cert_pem.bytes()).subject.rfc4514_string()
    direct, again, proxied = records
    assert (direct.mode, direct.proxy, direct.issuer, direct.status, direct.client, direct.session) == (
        "direct", None, issuer, 200, "curl", 3)
    assert direct.local_port == again.local_port == servers.seen.requests[0][0]  # what the server saw
    assert (proxied.mode, proxied.proxy, proxied.credentials_sent, proxied.status) == (
        "absolute-form", "proxy.example:3128", True, 200)
    assert proxied.proxy_endpoint is not None and proxied.proxy_endpoint.startswith("127.0.0.1:")
    assert "p@ss" not in repr(records) and "p%40ss" not in repr(records)


async def test_a_refused_connect_is_recorded_with_what_the_proxy_offered() -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: NTLM\r\n"
                     b"Proxy-Authenticate: Negotiate\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    network = LabNetwork()
    network.add("proxy.example", 3128, Endpoint("127.0.0.1", server.sockets[0].getsockname()[1]), "proxy")
    network.add("secure.example", 443, Endpoint("127.0.0.1", 9), "internet")
    records: list[EgressRecord] = []
    try:
        async with EgressSession(network, "127.0.0.1", trust_context([]), recorder=records.append) as session:
            with pytest.raises(EgressError):
                await session.request("GET", "https://secure.example/", proxy="http://u:secret@proxy.example:3128")
    finally:
        server.close()
        await server.wait_closed()
    [record] = records
    assert (record.mode, record.connect_status, record.proxy_authenticate, record.credentials_sent) == (
        "connect", 407, ("NTLM", "Negotiate"), True)
    assert (record.error_kind, record.status) == ("proxy-status", None)


async def test_a_proxy_that_refuses_connections_is_recorded_as_such(servers: Servers) -> None:
    servers.network.add("down.example", 3128, Endpoint("127.0.0.1", 9), "proxy")  # nothing listens there
    records: list[EgressRecord] = []
    async with EgressSession(servers.network, "127.0.0.1", trusting(servers.ca), recorder=records.append) as session:
        with pytest.raises(EgressError):
            await session.request("GET", "https://secure.example/", proxy="http://down.example:3128")
    assert [(r.mode, r.proxy, r.error_kind) for r in records] == [("connect", "down.example:3128", "proxy-refused")]
