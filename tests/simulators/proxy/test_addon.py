"""The lab's mitmproxy addons, driven by mitmproxy's own test harness (``taddons``, ``tflow``):
resolution through the lab table, the flow log (never credentials) and fault switches."""

from __future__ import annotations

import json
from pathlib import Path

from mitmproxy import http
from mitmproxy.proxy.server_hooks import ServerConnectionHookData
from mitmproxy.test import taddons, tflow

from proxyfleet.simulators.network import Endpoint, LabNetwork
from proxyfleet.simulators.proxy.addon import Faults, FlowLog, LabResolution, StreamFile, saved_state


def lab_table(tmp_path: Path) -> Path:
    network = LabNetwork()
    network.add("quay.io", 443, Endpoint("127.30.0.5", 4443), "internet")
    network.add("ctldl.windowsupdate.com", 80, Endpoint("127.30.0.6", 8080), "internet")
    path = tmp_path / "lab-table.json"
    network.write(path)
    return path


def request_flow(host: str, port: int, scheme: str = "https", method: str = "GET") -> http.HTTPFlow:
    flow = tflow.tflow()
    flow.request.host, flow.request.port, flow.request.scheme, flow.request.method = host, port, scheme, method
    flow.request.path = "/v2/" if method != "CONNECT" else ""
    if scheme == "http":
        flow.client_conn.timestamp_tls_setup = None  # a plain proxy request, not one inside a tunnel
    return flow


async def test_known_destinations_pass_and_unknown_ones_get_a_502_naming_them(tmp_path: Path) -> None:
    resolution = LabResolution()
    with taddons.context(resolution) as context:
        context.configure(resolution, lab_table=str(lab_table(tmp_path)))
        assert await refused(resolution, request_flow("quay.io", 443, method="CONNECT")) is None
        unknown = request_flow("nothere.example.org", 443, method="CONNECT")
        assert await refused(resolution, unknown) == 502
        assert unknown.response is not None and b"nothere.example.org" in unknown.response.content
        assert "nothere.example.org" in unknown.metadata["lab_error"]
        # a plain-HTTP proxy request (absolute form) is checked on its own port: port 80 is known,
        # another port of the same name is not
        assert await refused(resolution, request_flow("ctldl.windowsupdate.com", 80, scheme="http")) is None
        assert await refused(resolution, request_flow("ctldl.windowsupdate.com", 8081, scheme="http")) == 502


async def refused(resolution: LabResolution, flow: http.HTTPFlow) -> int | None:
    """The status the addon answered ``flow`` with itself (None: it let the flow through)."""
    if flow.request.method == "CONNECT":
        await resolution.http_connect(flow)
    else:
        await resolution.requestheaders(flow)
    return flow.response.status_code if flow.response is not None else None

async def test_upstream_connections_go_to_the_mapped_loopback_endpoint_with_sni(tmp_path: Path) -> None:
    resolution = LabResolution()
    with taddons.context(resolution) as context:
        context.configure(resolution, lab_table=str(lab_table(tmp_path)))
        server = tflow.tserver_conn()
        server.address, server.sni = ("quay.io", 443), None
        await resolution.server_connect(ServerConnectionHookData(server, tflow.tclient_conn()))
        assert server.address == ("127.30.0.5", 4443) and server.sni == "quay.io"
        nowhere = tflow.tserver_conn()
        nowhere.address = ("10.9.9.9", 443)
        await resolution.server_connect(ServerConnectionHookData(nowhere, tflow.tclient_conn()))
        assert nowhere.error and nowhere.address == ("10.9.9.9", 443)  # refused, never redirected


def test_the_flow_log_names_the_node_and_target_and_never_credentials(tmp_path: Path) -> None:
    log = FlowLog()
    path = tmp_path / "flows.jsonl"
    with taddons.context(log) as context:
        context.configure(log, flow_log=str(path))
        connect = request_flow("quay.io", 443, method="CONNECT")
        connect.request.headers["Proxy-Authorization"] = "Basic dXNlcjpzM2NyZXQ="
        connect.client_conn.peername = ("127.10.0.7", 50123)
        log.http_connect(connect)
        inner = request_flow("127.30.0.5", 4443)  # inside the tunnel mitmproxy points at the endpoint
        inner.client_conn = connect.client_conn
        inner.response = http.Response.make(200)
        log.response(inner)
        log.done()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["kind"], r["client"], r["host"], r["port"], r["status"]) for r in records] == [
        ("connect", "127.10.0.7", "quay.io", 443, 200), ("request", "127.10.0.7", "quay.io", 443, 200)]
    assert records[1]["connect_target"] == "quay.io:443" and records[1]["intercepted"] is True
    assert "dXNlcjpzM2NyZXQ=" not in path.read_text() and "s3cret" not in path.read_text()


def test_bad_gateway_fault_matches_host_patterns() -> None:
    faults = Faults()
    faults.bad_gateway = ["*.example.com"]
    hit = request_flow("www.example.com", 443, method="CONNECT")
    faults.http_connect(hit)
    assert hit.response is not None and hit.response.status_code == 502
    miss = request_flow("quay.io", 443, method="CONNECT")
    faults.http_connect(miss)
    assert miss.response is None


def test_the_stream_file_keeps_the_flow_and_never_its_proxy_credentials(tmp_path: Path) -> None:
    import io

    from mitmproxy.io import FlowReader

    flow = request_flow("quay.io", 443)
    flow.request.headers["Proxy-Authorization"] = "Basic dXNlcjpzM2NyZXQ="
    flow.request.headers.add("proxy-authorization", "Basic b3RoZXI6czNjcmV0")  # a second one, any case
    flow.metadata["proxyauth"] = ("user", "s3cret")
    flow.response = http.Response.make(200, b"manifest")
    flow.backup()  # the flow as it was before a change, kept in the flow and in its state
    saved = saved_state(flow)
    assert b"s3cret" not in saved and b"czNjcmV0" not in saved and b"dXNlcjpzM2NyZXQ=" not in saved
    (read,) = list(FlowReader(io.BytesIO(saved)).stream())
    assert isinstance(read, http.HTTPFlow) and read.id == flow.id  # the same flow, as mitmweb reads it
    assert read.request.pretty_url == flow.request.pretty_url and read.response is not None
    assert read.response.content == b"manifest" and tuple(read.metadata["proxyauth"]) == ("user", "***")
    assert "Proxy-Authorization" not in read.request.headers
    # the live flow is not touched: other addons still see what the client sent
    assert flow.metadata["proxyauth"] == ("user", "s3cret")
    assert flow.request.headers.get_all("Proxy-Authorization") == ["Basic dXNlcjpzM2NyZXQ=", "Basic b3RoZXI6czNjcmV0"]
    stream = StreamFile()
    with taddons.context(stream) as context:
        context.configure(stream, lab_stream_file=str(tmp_path / "flows.mitm"))
        stream.response(flow)
        stream.done()
    assert (tmp_path / "flows.mitm").read_bytes() == saved
