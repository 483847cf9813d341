"""An origin server: TLS behind its firewall, access log, and a stop that does not wait on clients."""

from __future__ import annotations

import asyncio
import gc
import ssl
import weakref

import trustme
from aiohttp import web

from proxyfleet.simulators.origins.server import OriginServer


async def _hello(request: web.Request) -> web.Response:
    return web.Response(text="hello")


def _origin(public_ca: trustme.CA, allows: bool = True) -> OriginServer:
    app = web.Application()
    app.router.add_get("/", _hello)
    return OriginServer(name="site", hosts=["site.example"], address="127.0.0.1", app=app,
                        certificate=public_ca.issue_cert("site.example"), allows=lambda _: allows, kind="internet")


async def _get(public_ca: trustme.CA, origin: OriginServer,
               headers: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Send ``GET /`` to the origin over TLS, as site.example; the answer is left to read."""
    context = ssl.create_default_context(cadata=public_ca.cert_pem.bytes().decode())
    reader, writer = await asyncio.open_connection("127.0.0.1", origin.port, ssl=context,
                                                   server_hostname="site.example")
    writer.write(b"GET / HTTP/1.1\r\nHost: site.example\r\n" + headers + b"\r\n")
    await writer.drain()
    return reader, writer


async def test_stop_cuts_a_kept_alive_connection(public_ca: trustme.CA) -> None:
    # Since Python 3.12.1 Server.wait_closed() waits for every accepted connection; an origin
    # that waited before cutting its keep-alive clients hung the lab's teardown.
    origin = _origin(public_ca)
    await origin.start()
    reader, writer = await _get(public_ca, origin, b"")
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    await asyncio.wait_for(origin.stop(), 10)  # the client still holds its connection open
    assert await asyncio.wait_for(reader.read(), 10) is not None  # and it is cut (EOF or reset)
    writer.close()
    assert [(r.sni, r.path, r.status) for r in origin.access_log] == [("site.example", "/", 200)]


async def test_a_refused_source_is_reset_and_logged(public_ca: trustme.CA) -> None:
    origin = _origin(public_ca, allows=False)
    await origin.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", origin.port)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        assert [v.source for v in origin.violations] == ["127.0.0.1"]
        assert origin.access_log == []
    finally:
        await origin.stop()


async def test_an_origin_without_a_certificate_speaks_plain_http(public_ca: trustme.CA) -> None:
    app = web.Application()
    app.router.add_get("/", _hello)
    origin = OriginServer(name="plain", hosts=["plain.example"], address="127.0.0.1", app=app,
                          certificate=None, allows=lambda _: True, kind="internet")
    await origin.start()
    try:
        assert origin.scheme == "http"
        reader, writer = await asyncio.open_connection("127.0.0.1", origin.port)
        writer.write(b"GET /?q=1 HTTP/1.1\r\nHost: plain.example\r\nConnection: close\r\n\r\n")
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert response.startswith(b"HTTP/1.1 200") and response.endswith(b"hello")
        assert [(r.source, r.sni, r.path, r.status) for r in origin.access_log] == [("127.0.0.1", None, "/?q=1", 200)]
    finally:
        await origin.stop()


async def test_a_plain_http_origin_keeps_its_firewall(public_ca: trustme.CA) -> None:
    origin = OriginServer(name="plain", hosts=["plain.example"], address="127.0.0.1", app=web.Application(),
                          certificate=None, allows=lambda _: False, kind="internet")
    await origin.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", origin.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: plain.example\r\n\r\n")
        assert await asyncio.wait_for(reader.read(), 10) == b""  # reset before any answer
        writer.close()
        assert [v.origin for v in origin.violations] == ["plain"] and origin.access_log == []
    finally:
        await origin.stop()


async def test_a_stopped_origin_is_not_kept_alive_by_aiohttp(public_ca: trustme.CA) -> None:
    # aiohttp caches each handler's middleware chain process-wide (1,024 entries); the chain holds the
    # origin (its logging middleware), its access log and the lab's callbacks. A worker runs lab after
    # lab: without forgetting them, eight 1,000-node labs in one worker grew it to 3.5 GB.
    origin = _origin(public_ca)
    await origin.start()
    reader, writer = await _get(public_ca, origin, b"Connection: close\r\n")
    assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 200")
    writer.close()
    await origin.stop()
    gone = weakref.ref(origin)
    del origin
    gc.collect()
    assert gone() is None, [type(r).__name__ for r in gc.get_referrers(gone())]
