"""An HTTPS (or plain-HTTP) origin behind an egress firewall, with an access log.

Before anything else, the firewall looks at the connecting address: a refused source is logged as
a violation and the connection is reset, as a firewall would. Allowed connections get TLS with a
certificate from the lab's public CA (an origin without a certificate speaks plain HTTP), then
aiohttp serves the application. Every request is logged with its source address, SNI, method,
path and status.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ssl
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trustme
from aiohttp import web, web_app

SourcePolicy = Callable[[str], bool]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class AccessRecord:
    time: dt.datetime
    source: str
    source_port: int
    sni: str | None
    method: str | None
    path: str | None
    status: int | None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"time": self.time.isoformat(), "source": self.source, "source_port": self.source_port,
                "sni": self.sni, "method": self.method, "path": self.path, "status": self.status,
                "error": self.error}


@dataclass(frozen=True)
class Violation:
    time: dt.datetime
    origin: str
    source: str
    source_port: int

    def as_json(self) -> dict[str, Any]:
        return {"time": self.time.isoformat(), "origin": self.origin, "source": self.source,
                "source_port": self.source_port}


def forget_middleware_chains() -> None:
    """Empty aiohttp's process-wide cache of built middleware chains.

    Since aiohttp 3.10.6 each (handler, applications) pair's chain is kept in a module-level LRU of
    1,024 entries: a stopped origin's application, its logging middleware and through them its access
    log and the lab's callbacks stayed alive until 1,024 newer chains pushed them out. One worker
    runs lab after lab: at 1,000 nodes it reached 3.5 GB after eight labs.
    Emptying it costs the running origins one rebuild per route. Nothing to do without the cache.
    """
    cache = getattr(web_app, "_cached_build_middleware", None)
    cache_clear = getattr(cache, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


@dataclass
class OriginServer:
    """One origin: a name, the virtual host names it answers for, its firewall and its app.
    Without a certificate it serves plain HTTP."""

    name: str
    hosts: list[str]
    address: str
    app: web.Application
    certificate: trustme.LeafCert | None
    allows: SourcePolicy
    kind: str  # "internet" or "intranet"
    access_log: list[AccessRecord] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    port: int = 0
    on_violation: Callable[[Violation], None] | None = None  # told of each refusal as it happens

    def __post_init__(self) -> None:
        self._server: asyncio.AbstractServer | None = None
        self._runner: web.AppRunner | None = None
        self._sni: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._tasks: set[asyncio.Task[None]] = set()
        self._transports: weakref.WeakSet[asyncio.Transport] = weakref.WeakSet()
        self._context: ssl.SSLContext | None = None
        if self.certificate is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.certificate.configure_cert(context)
            context.sni_callback = self._remember_sni
            self._context = context
        self.app.middlewares.append(self._log_middleware)

    @property
    def scheme(self) -> str:
        """``https``, or ``http`` for an origin without a certificate."""
        return "https" if self.certificate is not None else "http"

    def _remember_sni(self, ssl_object: Any, server_name: str | None, _: ssl.SSLContext) -> None:
        if server_name:
            self._sni[ssl_object] = server_name

    @web.middleware
    async def _log_middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport else ("?", 0)
        ssl_object = transport.get_extra_info("ssl_object") if transport else None
        sni = self._sni.get(ssl_object) if ssl_object is not None else None
        status: int | None = None
        try:
            response: web.StreamResponse = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            self.access_log.append(AccessRecord(_now(), peer[0], peer[1], sni, request.method,
                                                request.path_qs, status))

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Gate(self), self.address, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        # Cut open connections before waiting: since Python 3.12.1 ``wait_closed()`` waits until
        # every accepted connection has closed, and keep-alive clients would hold it forever.
        for transport in list(self._transports):
            transport.abort()
        if server is not None:
            await server.wait_closed()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        forget_middleware_chains()

    def _refuse(self, transport: asyncio.Transport, peer: tuple[str, int]) -> None:
        violation = Violation(_now(), self.name, peer[0], peer[1])
        self.violations.append(violation)
        transport.abort()  # a reset, as the egress firewall sends
        if self.on_violation is not None:
            self.on_violation(violation)

    def _accept(self, transport: asyncio.Transport, peer: tuple[str, int]) -> None:
        self._transports.add(transport)
        if self._context is None:  # plain HTTP: the application reads the connection itself
            assert self._runner is not None and self._runner.server is not None
            handler = self._runner.server()
            transport.set_protocol(handler)
            handler.connection_made(transport)
            return
        transport.pause_reading()  # the ClientHello waits for the TLS layer
        task = asyncio.get_running_loop().create_task(self._upgrade(transport, peer),
                                                      name=f"tls {self.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _upgrade(self, transport: asyncio.Transport, peer: tuple[str, int]) -> None:
        assert self._runner is not None and self._runner.server is not None
        handler = self._runner.server()
        loop = asyncio.get_running_loop()
        assert self._context is not None
        try:
            tls = await loop.start_tls(transport, handler, self._context, server_side=True,
                                       ssl_handshake_timeout=10)
        except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as exc:
            self.access_log.append(AccessRecord(_now(), peer[0], peer[1], None, None, None, None,
                                                f"TLS handshake failed: {exc}"))
            with contextlib.suppress(Exception):
                transport.abort()
            return
        if tls is None:  # pragma: no cover - the peer went away during the handshake
            return
        handler.connection_made(tls)


class _Gate(asyncio.Protocol):
    """The egress firewall in front of an origin."""

    def __init__(self, origin: OriginServer) -> None:
        self.origin = origin

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        peer = transport.get_extra_info("peername")
        if not self.origin.allows(peer[0]):
            self.origin._refuse(transport, (peer[0], peer[1]))
        else:
            self.origin._accept(transport, (peer[0], peer[1]))
