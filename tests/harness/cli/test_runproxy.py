"""The proxy a cluster run starts itself: a real mitmdump on the address asked for, resolving only
the hosts file's names, logging each flow with the client it came from, stopped with the run."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from proxyfleet.core.lifecycle import process_alive
from proxyfleet.harness.cli.runproxy import RunProxy, RunProxySpec
from proxyfleet.harness.lab.vendor import VendorProxyError, parse_listen
from proxyfleet.simulators.network import ClusterEndpoint
from tests.support import serving


def test_listen_is_an_address_of_the_users_network_and_a_port() -> None:
    # the lab's own parser, with the cluster's endpoint kind: not held to loopback, as the lab's is
    assert parse_listen("10.0.0.9:3128", ClusterEndpoint) == ClusterEndpoint("10.0.0.9", 3128)
    with pytest.raises(VendorProxyError, match="not a loopback address"):
        parse_listen("10.0.0.9:3128")
    spec = RunProxySpec(parse_listen("[::1]:3128", ClusterEndpoint))
    assert (spec.url, spec.authority) == ("http://[::1]:3128", "[::1]:3128")
    assert parse_listen(spec.authority, ClusterEndpoint) == spec.listen  # what the judge reads back
    for bad in ("10.0.0.9", ":3128", "[]:3128", "10.0.0.9:0", "10.0.0.9:http", "10.0.0.9:70000"):
        with pytest.raises(VendorProxyError, match="is not ADDRESS:PORT"):
            parse_listen(bad, ClusterEndpoint)


async def _hello(request: web.Request) -> web.Response:
    return web.Response(text="hello")


async def test_the_runs_proxy_resolves_only_its_hosts_file_and_logs_each_flow(tmp_path: Path) -> None:
    app = web.Application()
    app.router.add_get("/", _hello)
    async with serving(app) as base:
        port = int(base.rsplit(":", 1)[1])
        hosts = tmp_path / "hosts"
        hosts.write_text("# the lab's names\n127.0.0.1 origin.corp.example  # on loopback\n")
        spec = RunProxySpec(ClusterEndpoint("127.23.0.1", 0), hosts_file=hosts, egress_address="127.0.0.1")
        with RunProxy(spec, tmp_path / "proxy") as proxy:
            pid = proxy.server.pid
            url = f"http://127.23.0.1:{proxy.server.port}"
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://origin.corp.example:{port}/", proxy=url) as answer:
                    assert (answer.status, await answer.text()) == (200, "hello")
                async with session.get(f"http://elsewhere.example:{port}/", proxy=url) as answer:
                    assert answer.status == 502
                    assert f"not in the hosts file {hosts}" in await answer.text()
            assert proxy.flow_log is not None
            flows = [json.loads(line) for line in proxy.flow_log.read_text().splitlines()]
            assert [(f["host"], f["status"], f["client"]) for f in flows] == [
                ("origin.corp.example", 200, "127.0.0.1"), ("elsewhere.example", 502, "127.0.0.1")]
            assert len(proxy.ca_pems) == 1 and b"BEGIN CERTIFICATE" in proxy.ca_pems[0]
            assert proxy.access_log is None  # the run's mitmdump: a JSON flow log, no native log
        assert pid is not None and not process_alive(pid)
