"""The HTTP client behind a node's egress: resolves through the lab table, binds to the node's
own address, tunnels through a proxy with CONNECT, verifies TLS against the node's trust.

It never connects anywhere but a loopback endpoint from the lab table. HTTP/1.1 framing is
h11's; one connection per (route) is kept alive for the session's requests. Every step is
recorded so callers can render it the way their real client would (curl's ``-v``, Go errors),
and every request leaves an ``EgressRecord`` with the session's recorder: the lab's evidence of
the route it took (``records``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import h11
from cryptography import x509

from proxyfleet.core.noproxy.urls import URLError, parse_target
from proxyfleet.simulators.egress.records import EgressRecord, Mode
from proxyfleet.simulators.network import LabNetwork, NetworkError, NoRoute, NoSuchHost

Recorder = Callable[[EgressRecord], None]

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
MAX_BODY = 256 << 20


class EgressError(Exception):
    """A failed request; ``kind`` says which step failed, ``detail`` the lower-level cause."""

    def __init__(self, kind: str, detail: str, *, status: int | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind  # dns, refused, reset, proxy-refused, proxy-status, tls-unknown-authority,
        self.detail = detail  # tls-hostname, tls, timeout, protocol, url
        self.status = status


@dataclass
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    http_version: str = "1.1"

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)


@dataclass
class Trace:
    """What happened, step by step (curl -v renders this)."""

    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)


def trust_context(ca_certificates_der: Sequence[bytes], verify: bool = True) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    for der in ca_certificates_der:
        context.load_verify_locations(cadata=der)
    return context


def _tls_error(exc: ssl.SSLError) -> EgressError:
    if isinstance(exc, ssl.SSLCertVerificationError):
        if exc.verify_code in (2, 19, 20, 21):  # issuer unknown / self-signed in chain / leaf
            return EgressError("tls-unknown-authority", exc.verify_message or str(exc))
        if exc.verify_code == 62:
            return EgressError("tls-hostname", exc.verify_message or str(exc))
        return EgressError("tls", exc.verify_message or str(exc))
    return EgressError("tls", str(exc))


@dataclass
class _Route:
    """How one connection was made, for the records of the requests it carries."""

    mode: Mode = "direct"
    proxy: str | None = None
    proxy_endpoint: str | None = None
    local_port: int | None = None
    credentials_sent: bool = False
    connect_status: int | None = None
    connect_reason: str | None = None
    proxy_authenticate: tuple[str, ...] = ()
    issuer: str | None = None


def _schemes(headers: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The authentication schemes ``Proxy-Authenticate`` headers offer (``Basic realm=…`` -> Basic)."""
    return tuple(dict.fromkeys(v.strip().split(" ", 1)[0] for k, v in headers
                               if k.lower() == "proxy-authenticate" and v.strip()))


def _authority(proxy: str | None) -> str | None:
    """A proxy URL's ``host:port`` (credentials left out): how a record names the proxy dialled."""
    if proxy is None:
        return None
    parts = urlsplit(proxy)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return parts.hostname
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: _Route) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.route = route

    async def exchange(self, request: h11.Request, body: bytes = b"",
                       head_only: bool = False) -> Response:
        data = self.h11.send(request) or b""
        if body:
            data += self.h11.send(h11.Data(data=body)) or b""
        data += self.h11.send(h11.EndOfMessage()) or b""
        self.writer.write(data)
        await self.writer.drain()
        response: h11.Response | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                async with asyncio.timeout(READ_TIMEOUT):
                    chunk = await self.reader.read(65536)
                if not chunk and response is None:
                    raise EgressError("reset", "connection closed before a response (EOF)")
                self.h11.receive_data(chunk)
                continue
            if isinstance(event, h11.Response | h11.InformationalResponse):
                if isinstance(event, h11.Response):
                    response = event
                    if request.method == b"CONNECT" and 200 <= event.status_code < 300:
                        break
                continue
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY:
                    raise EgressError("protocol", "response body too large")
                chunks.append(event.data)
                continue
            if isinstance(event, h11.EndOfMessage | h11.ConnectionClosed) or event is h11.PAUSED:
                break
        assert response is not None
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers]
        return Response(response.status_code, response.reason.decode("latin-1"), headers,
                        b"" if head_only else b"".join(chunks),
                        response.http_version.decode())

    def reusable(self) -> bool:
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class EgressSession:
    """Requests from one node: keeps connections alive until ``close``."""

    def __init__(self, network: LabNetwork | None, source_address: str,
                 trust: ssl.SSLContext, trace: Trace | None = None,
                 user_agent: str = "proxyfleet-node", *, client: str = "node", recorder: Recorder | None = None,
                 session: int = 0) -> None:
        """``recorder`` is told of every request (``client``'s, in invocation ``session``)."""
        self.network = network
        self.source_address = source_address
        self.trust = trust
        self.trace = trace or Trace()
        self.user_agent = user_agent
        self.client = client
        self.recorder = recorder
        self.session = session
        self._pool: dict[tuple[str, str, int, str | None], _Connection] = {}
        self.remote: tuple[str, int] | None = None  # the virtual host:port last connected to
        # (server name, issuer of the certificate it was shown) for every TLS handshake: the
        # proxy's CA when it intercepts, the origin's when it tunnels.
        self.certificates: list[tuple[str, str]] = []

    async def close(self) -> None:
        for connection in self._pool.values():
            connection.close()
        self._pool.clear()

    async def __aenter__(self) -> EgressSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _dial(self, host: str, port: int, route: _Route, *, proxy: bool) -> _Connection:
        if self.network is None:
            raise EgressError("dns", NoSuchHost(host).args[0])
        try:
            resolved = self.network.resolve(host, port)
        except NoSuchHost as exc:
            raise EgressError("dns" if not proxy else "proxy-dns", str(exc)) from None
        except NoRoute as exc:
            raise EgressError("refused" if not proxy else "proxy-refused", str(exc)) from None
        except NetworkError as exc:  # pragma: no cover - no other kinds today
            raise EgressError("refused", str(exc)) from None
        self.trace.add(f"*   Trying {host}:{port}...")
        endpoint = resolved.endpoint
        if proxy:
            route.proxy_endpoint = f"{endpoint.address}:{endpoint.port}"
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                reader, writer = await asyncio.open_connection(endpoint.address, endpoint.port,
                                                               local_addr=(self.source_address, 0))
        except TimeoutError:
            raise EgressError("timeout", f"dial tcp {host}:{port}: i/o timeout") from None
        except ConnectionRefusedError:
            kind = "proxy-refused" if proxy else "refused"
            raise EgressError(kind, f"dial tcp {host}:{port}: connect: connection refused") from None
        except OSError as exc:
            raise EgressError("refused", f"dial tcp {host}:{port}: {exc.strerror or exc}") from None
        self.remote = (host, port)
        route.local_port = int(writer.get_extra_info("sockname")[1])
        self.trace.add(f"* Connected to {host} ({endpoint.address}) port {port} (#0)")
        return _Connection(reader, writer, route)

    async def _tls(self, connection: _Connection, server_name: str, *, origin: bool = True) -> _Connection:
        self.trace.add("* TLS handshake with " + server_name)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                await connection.writer.start_tls(self.trust, server_hostname=server_name)
        except ssl.SSLError as exc:
            connection.close()
            raise _tls_error(exc) from None
        except (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError) as exc:
            connection.close()
            raise EgressError("reset", f"read: connection reset by peer ({type(exc).__name__})") from None
        except TimeoutError:
            connection.close()
            raise EgressError("timeout", "TLS handshake timeout") from None
        self.trace.add("* SSL connection established")
        ssl_object = connection.writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der:
            issuer = x509.load_der_x509_certificate(der).issuer.rfc4514_string()
            self.certificates.append((server_name, issuer))  # not traced: Schannel's -v omits it
            if origin:
                connection.route.issuer = issuer
        return connection

    async def request(self, method: str, url: str, *, proxy: str | None = None,
                      headers: Sequence[tuple[str, str]] = (), body: bytes = b"") -> Response:
        """One request, direct or through ``proxy`` (an http:// proxy URL), recorded either way."""
        # what is known of the route before a connection exists; a new connection fills it in
        attempt = _Route(mode="direct" if proxy is None else "connect", proxy=_authority(proxy))
        try:
            response, route = await self._request(method, url, proxy, headers, body, attempt)
        except EgressError as exc:
            self._record(method, url, attempt, None, exc)
            raise
        self._record(method, url, route, response, None)
        return response

    def _record(self, method: str, url: str, route: _Route, response: Response | None,
                error: EgressError | None) -> None:
        if self.recorder is None:
            return
        authenticate = route.proxy_authenticate
        if response is not None and route.mode == "absolute-form" and response.status == 407:
            authenticate = _schemes(response.headers)  # the proxy answered the request itself
        self.recorder(EgressRecord(
            time=dt.datetime.now(dt.UTC), source=self.source_address, client=self.client, session=self.session,
            method=method, url=url, mode=route.mode, proxy=route.proxy, proxy_endpoint=route.proxy_endpoint,
            local_port=route.local_port, credentials_sent=route.credentials_sent,
            connect_status=route.connect_status, connect_reason=route.connect_reason,
            proxy_authenticate=authenticate, issuer=route.issuer,
            status=response.status if response is not None else None,
            error_kind=error.kind if error is not None else None, error=error.detail if error is not None else None))

    async def _request(self, method: str, url: str, proxy: str | None, headers: Sequence[tuple[str, str]],
                       body: bytes, attempt: _Route) -> tuple[Response, _Route]:
        try:
            target = parse_target(url)
        except URLError as exc:
            raise EgressError("url", str(exc)) from None
        port = int(target.effective_port or 0)
        if target.scheme not in ("http", "https") or not port:
            raise EgressError("url", f"unsupported protocol scheme {target.scheme!r}")
        host_header = (f"[{target.host}]" if target.bracketed else target.host) + (
            f":{target.port}" if target.port else "")
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        key = (target.scheme, target.host.lower(), port, proxy)
        connection = self._pool.pop(key, None)
        if connection is None:
            connection = await self._open(target.scheme, target.host, port, proxy, attempt)
        route = connection.route
        request_target = path
        extra: list[tuple[str, str]] = []
        if proxy is not None and target.scheme == "http":
            request_target = url  # absolute form through an HTTP proxy
            extra += self._proxy_authorization(proxy)
            route.credentials_sent = bool(extra)
        request = h11.Request(method=method, target=request_target, headers=[
            ("Host", host_header), ("User-Agent", self.user_agent), ("Accept", "*/*"),
            *extra, *headers, *([("Content-Length", str(len(body)))] if body else [])])
        self.trace.add(f"> {method} {request_target} HTTP/1.1")
        try:
            response = await connection.exchange(request, body, head_only=method == "HEAD")
        except (ConnectionResetError, BrokenPipeError) as exc:
            connection.close()
            raise EgressError("reset", f"read: connection reset by peer ({type(exc).__name__})") from None
        except h11.RemoteProtocolError as exc:
            connection.close()
            raise EgressError("protocol", f"malformed HTTP response: {exc}") from None
        except TimeoutError:
            connection.close()
            raise EgressError("timeout", "timeout awaiting response headers") from None
        self.trace.add(f"< HTTP/{response.http_version} {response.status} {response.reason}")
        if connection.reusable():
            connection.h11.start_next_cycle()
            self._pool[key] = connection
        else:
            connection.close()
        return response, route

    @staticmethod
    def _proxy_authorization(proxy: str) -> list[tuple[str, str]]:
        parts = urlsplit(proxy)
        if parts.username is None:
            return []
        token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        return [("Proxy-Authorization", "Basic " + base64.b64encode(token).decode())]

    async def _open(self, scheme: str, host: str, port: int, proxy: str | None, route: _Route) -> _Connection:
        if proxy is None:
            connection = await self._dial(host, port, route, proxy=False)
            return await self._tls(connection, host) if scheme == "https" else connection
        proxy_parts = urlsplit(proxy)
        if proxy_parts.scheme not in ("http", "https") or not proxy_parts.hostname:
            raise EgressError("url", f"unsupported proxy scheme {proxy_parts.scheme}:// (http:// and https:// are)")
        default_port = 443 if proxy_parts.scheme == "https" else 80
        route.mode = "connect" if scheme == "https" else "absolute-form"
        connection = await self._dial(proxy_parts.hostname, proxy_parts.port or default_port, route, proxy=True)
        if proxy_parts.scheme == "https":
            # TLS to the proxy itself, verified against the node's trust like any server; inside
            # it, the CONNECT and then the origin's TLS (TLS in TLS).
            try:
                connection = await self._tls(connection, proxy_parts.hostname, origin=False)
            except EgressError as exc:
                raise EgressError(f"proxy-{exc.kind}", exc.detail) from None
        if scheme == "http":
            return connection
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.trace.add(f"> CONNECT {authority} HTTP/1.1")
        credentials = self._proxy_authorization(proxy)
        route.credentials_sent = bool(credentials)
        request = h11.Request(method="CONNECT", target=authority, headers=[
            ("Host", authority), ("User-Agent", self.user_agent), *credentials])
        try:
            response = await connection.exchange(request)
        except (ConnectionResetError, BrokenPipeError, EgressError) as exc:
            connection.close()
            raise EgressError("proxy-reset", f"proxyconnect tcp: {exc}") from None
        self.trace.add(f"< HTTP/{response.http_version} {response.status} {response.reason}")
        route.connect_status, route.connect_reason = response.status, response.reason
        if response.status == 407:
            route.proxy_authenticate = _schemes(response.headers)
        if not 200 <= response.status < 300:
            connection.close()
            raise EgressError("proxy-status", f"{response.status} {response.reason}",
                              status=response.status)
        self.trace.add(f"* CONNECT tunnel established, response {response.status}")
        # The proxy says nothing more until the client's TLS ClientHello, so no bytes are left over.
        return await self._tls(_Connection(connection.reader, connection.writer, route), host)
