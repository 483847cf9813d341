"""The proxy a cluster run starts itself: a real mitmdump on the address asked for, resolving only
the hosts file's names, logging each flow with the client it came from, stopped with the run."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import threading
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from proxyfleet.core.lifecycle import process_alive
from proxyfleet.harness.cli.runproxy import InstanceAddressError, RunProxy, RunProxySpec, instance_addresses
from proxyfleet.harness.lab.vendor import VendorProxyError, parse_listen
from proxyfleet.simulators.network import ClusterEndpoint
from tests.support import HANG, serving, wait_until


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


def _basic(user: str, password: str) -> dict[str, str]:
    # as a request header: aiohttp sends proxy_headers on CONNECT only, and these requests are plain HTTP
    return {"Proxy-Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _counting_app() -> tuple[web.Application, list[str]]:
    seen: list[str] = []

    async def hello(request: web.Request) -> web.Response:
        seen.append(request.remote or "")
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    return app, seen


async def test_the_runs_proxy_demands_the_credentials_and_serves_only_the_instances(tmp_path: Path) -> None:
    app, seen = _counting_app()
    async with serving(app) as base:
        port = int(base.rsplit(":", 1)[1])
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 origin.corp.example\n")
        # a password with ':' (RFC 7617 allows it) and PowerShell code, as --proxy-auth-file gives it
        user, password = "svc proxy", "p@ss:w0rd/$(x)'"
        spec = RunProxySpec(ClusterEndpoint("127.23.0.2", 0), hosts_file=hosts, egress_address="127.0.0.1",
                            auth=f"{user}:{password}", allowed_clients=("127.0.0.1", "127.24.0.0/24"))
        with RunProxy(spec, tmp_path / "proxy") as proxy:
            assert proxy.server is not None
            # the CA's key was read at start-up; on disk it would outlive a killed run
            assert not proxy.server.ca_key_path.exists()
            url = f"http://127.23.0.2:{proxy.server.port}"
            target = f"http://origin.corp.example:{port}/"
            async with aiohttp.ClientSession() as session:
                async with session.get(target, proxy=url) as answer:
                    assert answer.status == 407
                    assert answer.headers["Proxy-Authenticate"] == 'Basic realm="proxyfleet"'
                async with session.get(target, proxy=url, headers=_basic(user, "wrong")) as answer:
                    assert answer.status == 407
                async with session.get(target, proxy=url, headers=_basic(user, password)) as answer:
                    assert (answer.status, await answer.text()) == (200, "hello")
            assert seen == ["127.0.0.1"]  # only the authenticated request reached the origin
            # from an address that is not an instance's: the connection is closed unanswered
            connector = aiohttp.TCPConnector(local_addr=("127.0.0.3", 0))
            async with aiohttp.ClientSession(connector=connector) as session:
                with pytest.raises(aiohttp.ClientError):
                    async with session.get(target, proxy=url, headers=_basic(user, password)):
                        pass
            # one of an allowed network is served
            connector = aiohttp.TCPConnector(local_addr=("127.24.0.9", 0))
            async with aiohttp.ClientSession(connector=connector) as session, \
                    session.get(target, proxy=url, headers=_basic(user, password)) as answer:
                assert answer.status == 200
            assert seen == ["127.0.0.1", "127.0.0.1"]
            assert proxy.flow_log is not None
            flows = [json.loads(line) for line in proxy.flow_log.read_text().splitlines()]
            refused = [f for f in flows if f["kind"] == "client-refused"]
            assert {f["client"] for f in refused} == {"127.0.0.3"}  # (aiohttp tries a GET twice)
            assert "is not an instance of the cluster" in refused[0]["error"]
            assert password not in proxy.flow_log.read_text()


async def test_resolving_through_the_system_the_runs_proxy_reaches_nothing_of_its_own_machine(
        tmp_path: Path) -> None:
    app, seen = _counting_app()
    async with serving(app) as base:
        port = int(base.rsplit(":", 1)[1])
        # no --proxy-hosts: names and addresses resolve through the system
        spec = RunProxySpec(ClusterEndpoint("127.23.0.3", 0), egress_address="127.0.0.1")
        with RunProxy(spec, tmp_path / "proxy") as proxy:
            assert proxy.server is not None
            url = f"http://127.23.0.3:{proxy.server.port}"
            async with aiohttp.ClientSession() as session:
                for target in (f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://[::1]:{port}/"):
                    async with session.get(target, proxy=url) as answer:
                        assert answer.status == 403, target
                        assert "is a loopback address" in await answer.text()
                        assert "map the name in --proxy-hosts to allow it" in await answer.text()
            assert seen == []  # and no connection was made


def test_the_instances_addresses_are_known_before_the_proxy_serves_them() -> None:
    assert instance_addresses(["127.0.0.5", "127.0.0.5", "10.0.5.21"]) == ["127.0.0.5", "10.0.5.21"]
    assert "127.0.0.1" in instance_addresses(["localhost"])
    with pytest.raises(InstanceAddressError, match=r"'win-1\.nowhere\.invalid' does not resolve here"):
        instance_addresses(["win-1.nowhere.invalid"])
    with pytest.raises(InstanceAddressError, match="windows-instances is empty"):
        instance_addresses([])


def test_a_vendors_proxy_is_read_in_the_log_format_asked_for(tmp_path: Path) -> None:
    spec = RunProxySpec(ClusterEndpoint("127.23.0.9", 3128), egress_address="127.0.0.1", command="tinyproxy -d",
                        log_format="tinyproxy")
    proxy = RunProxy(spec, tmp_path / "run-proxy")  # not started: nothing runs until it is entered
    try:
        assert proxy.vendor is not None and proxy.vendor.settings.log_format == "tinyproxy"
    finally:
        proxy._loop.close()


class _HeldProxy:
    """Stands in for the run's proxy: its start and stop end only when the test lets them."""

    def __init__(self) -> None:
        self.began: list[str] = []
        self.release = {"start": threading.Event(), "stop": threading.Event()}
        self.stop_error: Exception | None = None

    async def start(self, limit: float) -> None:
        self.began.append("start")
        await asyncio.to_thread(self.release["start"].wait)

    async def stop(self) -> None:
        self.began.append("stop")
        await asyncio.to_thread(self.release["stop"].wait)
        if self.stop_error is not None:
            raise self.stop_error


def _run_proxy_held(tmp_path: Path) -> tuple[RunProxy, _HeldProxy]:
    proxy = RunProxy(RunProxySpec(ClusterEndpoint("127.23.0.8", 3128), egress_address="127.0.0.1"), tmp_path / "p")
    held = _HeldProxy()
    proxy.server = held  # type: ignore[assignment]
    return proxy, held


def test_the_run_waits_for_its_proxys_start_and_stop_however_long_they_take(tmp_path: Path) -> None:
    # Each is bounded by its own work (start-up clock; grace, SIGKILL, engine calls sized to the
    # image): a wall-clock figure on top once failed a correct run whose container took long to go.
    proxy, held = _run_proxy_held(tmp_path)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        entered = pool.submit(proxy.__enter__)
        asyncio.run(wait_until(lambda: held.began == ["start"], what="the start begun"))
        assert not entered.done()
        held.release["start"].set()
        assert entered.result(HANG) is proxy
        left = pool.submit(proxy.__exit__, None, None, None)
        asyncio.run(wait_until(lambda: held.began == ["start", "stop"], what="the stop begun"))
        assert not left.done() and not proxy._loop.is_closed()
        held.release["stop"].set()
        left.result(HANG)
    assert proxy._loop.is_closed() and not proxy._thread.is_alive()


def test_a_stop_that_fails_is_said_with_the_proxys_loop_ended(tmp_path: Path) -> None:
    proxy, held = _run_proxy_held(tmp_path)
    held.release["start"].set()
    held.stop_error = RuntimeError("the engine refused the stop")
    with pytest.raises(RuntimeError, match="the engine refused the stop"), proxy:
        held.release["stop"].set()
    assert proxy._loop.is_closed() and not proxy._thread.is_alive()
