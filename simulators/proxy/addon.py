"""The lab's mitmproxy addons, loaded into the real ``mitmdump`` with ``-s``.

* ``LabResolution``: every upstream connection goes to the loopback endpoint the lab table maps
  the virtual host to; an unknown destination gets a 502 naming it, and no connection is made.
  Without a table (a proxy a run starts for an existing cluster): a hosts file's names on the port
  asked for, anything else refused the same way — or, with neither, the system's own resolution.
* ``FlowLog``: one JSON line per CONNECT, request and failed client TLS handshake — client
  address (the node), CONNECT target, scheme, method, host, path, status, whether the TLS was
  intercepted, error. Never headers, never credentials.
* ``StreamFile``: every finished flow in a mitmproxy dump file, readable while the proxy runs.
* ``Faults``: switchable at run time over a control socket: refuse connections, 502 for some
  hosts, slow responses.
* ``ProxyAuthentication`` (``authentication.py``): Basic proxy credentials from a file (0600),
  never on ``mitmdump``'s command line.
* ``ClientAllowList`` (``guards.py``): only the listed client addresses may connect (the run's
  proxy for an existing cluster: the instances); and without a table or hosts file, destinations
  resolved through the system that are this machine's own or loopback/link-local are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fnmatch
import io
import json
import os
from pathlib import Path
from typing import Any

from mitmproxy import ctx, http
from mitmproxy.connection import Client
from mitmproxy.io import tnetstring
from mitmproxy.proxy.server_hooks import ServerConnectionHookData
from mitmproxy.tls import TlsData

from proxyfleet.core.looplag import LagMonitor
from proxyfleet.simulators.network import LabNetwork, NetworkError, NoSuchHost
from proxyfleet.simulators.proxy.authentication import ProxyAuthentication
from proxyfleet.simulators.proxy.guards import ClientAllowList, DestinationGuard, RefusedDestination


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def read_hosts_file(text: str) -> dict[str, str]:
    """A hosts file as name -> address (the first address listed for a name wins, as in libc)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            found.setdefault(name.lower().rstrip("."), fields[0])
    return found


class LabResolution:
    """Resolve every destination through the lab table (or a hosts file); refuse what it does not
    know. With neither option set, the system resolves — and with ``lab_guard_destinations``, an
    answer that is this machine's own or a loopback/link-local address is refused."""

    def __init__(self) -> None:
        self._network = LabNetwork()
        self._mtime = 0.0
        self._hosts: dict[str, str] | None = None
        self._guard = DestinationGuard()

    def load(self, loader: Any) -> None:
        loader.add_option("lab_table", str, "", "Path of the lab network table (JSON).")
        loader.add_option("lab_hosts", str, "", "Without lab_table: resolve only the names of this hosts file.")
        loader.add_option("lab_guard_destinations", bool, False,
                          "Without lab_table and lab_hosts: refuse destinations on this machine, loopback or "
                          "link-local.")

    async def _resolve(self, host: str, port: int) -> tuple[str, int] | None:
        """Where to connect for ``host:port`` (None: the system resolves it); raises NetworkError."""
        if ctx.options.lab_table:
            endpoint = self.network().resolve(host, port).endpoint
            return endpoint.address, endpoint.port
        if ctx.options.lab_hosts:
            address = (self._hosts or {}).get(host.lower().rstrip("."))
            if address is None:
                raise NoSuchHost(host, f"the hosts file {ctx.options.lab_hosts}")
            return address, port
        if ctx.options.lab_guard_destinations:
            return await self._guard.address(host, port), port
        return None

    def configure(self, updated: set[str]) -> None:
        if "lab_hosts" in updated:
            self._hosts = read_hosts_file(Path(ctx.options.lab_hosts).read_text()) if ctx.options.lab_hosts else None

    def network(self) -> LabNetwork:
        path = ctx.options.lab_table
        if path:
            mtime = os.stat(path).st_mtime
            if mtime != self._mtime:
                self._network = LabNetwork.from_json(Path(path).read_text())
                self._mtime = mtime
        return self._network

    async def _refuse(self, flow: http.HTTPFlow, host: str, port: int) -> bool:
        if flow.response is not None:
            return True  # proxy authentication already answered
        try:
            await self._resolve(host, port)
        except NetworkError as exc:
            status = 403 if isinstance(exc, RefusedDestination) else 502
            flow.response = http.Response.make(
                status, f"proxyfleet lab proxy: {exc}\n".encode(), {"Content-Type": "text/plain"})
            flow.metadata["lab_error"] = str(exc)
            return True
        return False

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        await self._refuse(flow, flow.request.host, flow.request.port)

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        # Requests inside a CONNECT tunnel were checked at CONNECT; plain-HTTP proxy requests
        # (absolute URLs) are checked here.
        if flow.request.scheme == "http" and not flow.client_conn.tls_established:
            await self._refuse(flow, flow.request.host, flow.request.port)

    async def server_connect(self, data: ServerConnectionHookData) -> None:
        assert data.server.address is not None
        host, port = str(data.server.address[0]), int(data.server.address[1])
        try:
            # Resolved again and connected to exactly what was checked: a second answer may differ.
            where = await self._resolve(host, port)
        except NetworkError as exc:
            data.server.error = str(exc)
            return
        if where is None:
            return  # the system resolves it
        if data.server.sni is None and not host.replace(".", "").isdigit() and ":" not in host:
            data.server.sni = host
        data.server.address = where


class OptionFile:
    """An addon that appends to a file named by one mitmproxy option, kept open while it runs."""

    option = ""
    help = ""
    mode = "a"
    buffering = 1

    def __init__(self) -> None:
        self._handle: Any = None

    def load(self, loader: Any) -> None:
        loader.add_option(self.option, str, "", self.help)

    def configure(self, updated: set[str]) -> None:
        path = getattr(ctx.options, self.option)
        if self.option in updated and path:
            if self._handle is not None:
                self._handle.close()
            self._handle = open(path, self.mode, buffering=self.buffering)  # noqa: SIM115 - kept open

    def done(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class FlowLog(OptionFile):
    """JSON lines a test or report can read while the proxy runs."""

    option = "flow_log"
    help = "Path of the JSON-lines flow log."

    def __init__(self) -> None:
        super().__init__()
        self._targets: dict[str, tuple[str, int]] = {}  # client connection id -> CONNECT target

    def _write(self, record: dict[str, Any]) -> None:
        if self._handle is not None:
            self._handle.write(json.dumps(record) + "\n")

    @staticmethod
    def _client(client: Client) -> tuple[str, int]:
        address = client.peername
        return str(address[0]), int(address[1])

    def http_connect(self, flow: http.HTTPFlow) -> None:
        address, port = self._client(flow.client_conn)
        status = flow.response.status_code if flow.response is not None else 200
        self._targets[flow.client_conn.id] = (flow.request.host, flow.request.port)
        self._write({"time": _now(), "kind": "connect", "client": address, "client_port": port,
                     "connect_target": f"{flow.request.host}:{flow.request.port}", "scheme": None,
                     "method": "CONNECT", "host": flow.request.host, "port": flow.request.port,
                     "path": None, "status": status, "intercepted": False,
                     "error": flow.metadata.get("lab_error")})

    def _request(self, flow: http.HTTPFlow, error: str | None) -> None:
        address, port = self._client(flow.client_conn)
        target = self._targets.get(flow.client_conn.id)
        # Inside a tunnel mitmproxy points the request at the real endpoint; report the virtual one.
        host, target_port = target if target else (flow.request.pretty_host, flow.request.port)
        self._write({"time": _now(), "kind": "request", "client": address, "client_port": port,
                     "connect_target": f"{host}:{target_port}" if target else None,
                     "scheme": flow.request.scheme, "method": flow.request.method,
                     "host": host, "port": target_port,
                     "path": flow.request.path,
                     "status": flow.response.status_code if flow.response is not None else None,
                     "intercepted": True, "error": error or flow.metadata.get("lab_error")})

    def response(self, flow: http.HTTPFlow) -> None:
        self._request(flow, None)

    def error(self, flow: http.HTTPFlow) -> None:
        self._request(flow, flow.error.msg if flow.error else "unknown error")

    def client_connected(self, client: Client) -> None:
        if client.error:  # refused before it sent anything (not an instance, or a fault)
            address, port = self._client(client)
            self._write({"time": _now(), "kind": "client-refused", "client": address, "client_port": port,
                         "connect_target": None, "scheme": None, "method": None, "host": None, "port": None,
                         "path": None, "status": None, "intercepted": False, "error": client.error})

    def client_disconnected(self, client: Client) -> None:
        self._targets.pop(client.id, None)

    def tls_failed_client(self, data: TlsData) -> None:
        address, port = self._client(data.context.client)
        connect = self._targets.get(data.context.client.id)
        target = f"{connect[0]}:{connect[1]}" if connect else None
        self._write({"time": _now(), "kind": "tls-failed", "client": address, "client_port": port,
                     "connect_target": target, "scheme": "https", "method": None,
                     "host": connect[0] if connect else data.context.client.sni,
                     "port": connect[1] if connect else None, "path": None, "status": None,
                     "intercepted": False,
                     "error": f"the client rejected the proxy's certificate: {data.conn.error}"})


class Faults:
    """Run-time fault injection, driven over a unix control socket (JSON lines); the same socket
    answers how late the proxy's own event loop has been (``{"op": "lag", "since": monotonic}``:
    the lab's measure of its starvation, ``core/looplag``)."""

    def __init__(self) -> None:
        self.refuse = False
        self.bad_gateway: list[str] = []
        self.delay = 0.0
        self._server: asyncio.AbstractServer | None = None
        self._lag = LagMonitor()

    def load(self, loader: Any) -> None:
        loader.add_option("control_socket", str, "", "Unix socket for fault control.")

    async def running(self) -> None:
        path = ctx.options.control_socket
        if path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self._server = await asyncio.start_unix_server(self._serve, path)
        self._lag.start()

    async def done(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._lag.stop()

    def state(self) -> dict[str, Any]:
        return {"refuse": self.refuse, "bad_gateway": self.bad_gateway, "delay": self.delay}

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                request = json.loads(line)
                answer: dict[str, Any] = {"ok": True, "state": self.state()}
                if request.get("op") == "set":
                    self.refuse = bool(request.get("refuse", self.refuse))
                    self.bad_gateway = list(request.get("bad_gateway", self.bad_gateway))
                    self.delay = float(request.get("delay", self.delay))
                    answer["state"] = self.state()
                elif request.get("op") == "lag":  # CLOCK_MONOTONIC is the machine's: the judge's own times
                    since = float(request.get("since", 0.0))
                    answer["lag"] = {"worst_s": round(self._lag.worst(since), 3),
                                     "stalled_s": round(self._lag.stalled(since), 3)}
                writer.write((json.dumps(answer) + "\n").encode())
                await writer.drain()
        finally:
            writer.close()

    def client_connected(self, client: Client) -> None:
        if self.refuse:
            client.error = "connection refused by fault injection"

    def _bad_gateway(self, flow: http.HTTPFlow) -> None:
        if flow.response is None and any(fnmatch.fnmatch(flow.request.host, p) for p in self.bad_gateway):
            flow.response = http.Response.make(
                502, f"proxyfleet fault injection: 502 for {flow.request.host}\n".encode(),
                {"Content-Type": "text/plain"})

    def http_connect(self, flow: http.HTTPFlow) -> None:
        self._bad_gateway(flow)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        self._bad_gateway(flow)

    async def responseheaders(self, flow: http.HTTPFlow) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)  # simulated: a slow proxy


class StreamFile(OptionFile):
    """Every finished HTTP flow appended to a mitmproxy dump file (``mitmweb --rfile`` opens it).

    mitmproxy's own ``save_stream_file`` buffers until exit, so a running lab's file would look
    empty; each flow here is serialised whole and written with one unbuffered write, with the proxy
    password mitmproxy's proxyauth addon keeps in the flow's metadata masked and the request's
    ``Proxy-Authorization`` left out.

    The flow's state is taken once (``get_state`` copies: the metadata deeply, the headers as a new
    tuple) and masked in place of copying the flow first: a copy rebuilt the whole flow from that
    state only to take its state again, 15 % of a lab proxy's CPU.
    """

    option = "lab_stream_file"
    help = "Path of the mitmproxy dump file, written flow by flow."
    mode = "ab"
    buffering = 0

    def _save(self, flow: http.HTTPFlow) -> None:
        if self._handle is None:
            return
        self._handle.write(saved_state(flow))

    def response(self, flow: http.HTTPFlow) -> None:
        self._save(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._save(flow)


def saved_state(flow: http.HTTPFlow) -> bytes:
    """The flow as mitmproxy's ``FlowWriter`` writes it (one tnetstring), without its proxy
    credentials: proxyauth's (user, password) in the metadata masked, ``Proxy-Authorization``
    headers (any case) dropped. The flow itself is left as it is."""
    state: dict[str, Any] = flow.get_state()
    _mask_credentials(state)
    if isinstance(state.get("backup"), dict):  # the flow as it was before something modified it
        _mask_credentials(state["backup"])
    buffer = io.BytesIO()
    tnetstring.dump(state, buffer)
    return buffer.getvalue()


def _mask_credentials(state: dict[str, Any]) -> None:
    metadata = state.get("metadata") or {}
    if "proxyauth" in metadata:
        metadata["proxyauth"] = (metadata["proxyauth"][0], "***")
    request = state.get("request")
    if request:
        request["headers"] = tuple((name, value) for name, value in request["headers"]
                                   if name.lower() != b"proxy-authorization")


# Order matters: who may connect, then credentials, faults and resolution decide before the log
# records the outcome.
addons = [ClientAllowList(), ProxyAuthentication(), Faults(), LabResolution(), FlowLog(), StreamFile()]
