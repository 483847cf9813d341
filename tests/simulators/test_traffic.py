"""Real traffic through the lab: the real mitmdump with a trustme MITM CA, HTTPS origins behind an
egress firewall, and nodes pulling images and fetching pages with their own clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.fleet import Fleet, FleetSettings
from proxyfleet.simulators.network import PROXY_NETWORK, LabNetwork
from proxyfleet.simulators.origins.catalog import (
    INTERNET_HTTP_SITE,
    INTERNET_REGISTRY,
    INTRANET_REGISTRY,
    INTRANET_REGISTRY_IP,
    Origins,
    start_origins,
)
from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings
from proxyfleet.simulators.windows.node import WindowsNode
from tests.support import run_powershell, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")
PROXY_NAME = "proxy.corp.internal"
CONTAINERD_KEY = r"HKLM:\SYSTEM\CurrentControlSet\Services\containerd"


@dataclass
class TrafficLab:
    network: LabNetwork
    public_ca: trustme.CA
    origins: Origins
    proxy: ProxyServer
    fleet: Fleet

    @property
    def proxy_url(self) -> str:
        return f"http://{PROXY_NAME}:{self.proxy.port}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[TrafficLab]:
    state = tmp_path_factory.mktemp("traffic")
    network = LabNetwork()
    public_ca = trustme.CA(organization_name="proxyfleet public roots")
    listen, egress = network.allocate(PROXY_NETWORK), network.allocate(PROXY_NETWORK)
    origins = await start_origins(network, public_ca, egress)
    proxy = ProxyServer(ProxySettings(state / "proxy", network, public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=egress))
    fleet = Fleet(FleetSettings(nodes=4, state_dir=state / "fleet", lab_network=network,
                                public_roots=[Certificate.from_pem(public_ca.cert_pem.bytes())]))
    try:
        await proxy.start()
        network.add(PROXY_NAME, proxy.port, proxy.endpoint, "proxy")
        proxy.publish_table()
        await fleet.start()
        yield TrafficLab(network, public_ca, origins, proxy, fleet)
    finally:
        await fleet.stop()
        await proxy.stop()
        await origins.stop()


async def trust_the_mitm_ca(lab: TrafficLab, node: WindowsNode) -> None:
    """Import the proxy's MITM CA into the node's Root store (idempotent).

    Each test that needs it does this itself: xdist may run any test of this module first, on a fresh lab."""
    node.machine.filesystem.write_bytes(r"C:\k\mitm.crt", lab.proxy.mitm_ca_pem)
    result = await run_powershell(lab.fleet, node, r"Import-Certificate C:\k\mitm.crt -CertStoreLocation Cert:\LocalMachine\Root")
    assert result.exit_status == 0, result.stderr


async def configure_containerd(lab: TrafficLab, node: WindowsNode, *, proxy: str | None,
                               no_proxy: str = "", trust_mitm: bool) -> None:
    """Give containerd a proxy through its own Environment value and restart it."""
    if trust_mitm:
        await trust_the_mitm_ca(lab, node)
    entries = [f"HTTPS_PROXY={proxy}", f"HTTP_PROXY={proxy}"] if proxy else []
    if no_proxy:
        entries.append(f"NO_PROXY={no_proxy}")
    values = ",".join(f"'{e}'" for e in entries) or "@()"
    result = await run_powershell(lab.fleet, node, f"New-ItemProperty -Path {CONTAINERD_KEY} -Name Environment "
                                           f"-PropertyType MultiString -Value @({values}) -Force | Out-Null;"
                                           "Restart-Service containerd -Force")
    assert result.exit_status == 0, result.stderr


def flows_from(lab: TrafficLab, node: WindowsNode, host: str) -> list[dict[str, object]]:
    return [f for f in lab.proxy.flows() if f["client"] == node.address and f["host"] == host]


async def test_pull_through_the_proxy_with_the_mitm_ca_trusted(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await configure_containerd(lab, node, proxy=lab.proxy_url, trust_mitm=True)
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/openshift/windows-test:latest")
    assert result.exit_status == 0, result.stderr
    image = lab.origins.images["quay.io/openshift/windows-test:latest"]
    config_digest = next(d for d, blob in image.blobs.items() if blob.startswith(b"{"))
    assert result.stdout.strip() == f"Image is up to date for {config_digest}"
    requests = [f for f in flows_from(lab, node, INTERNET_REGISTRY) if f["kind"] == "request"]
    assert {f["path"] for f in requests} >= {"/v2/openshift/windows-test/manifests/latest"}
    assert all(f["intercepted"] and f["status"] == 200 for f in requests)
    seen = {r.source for r in lab.origins.access_log(INTERNET_REGISTRY)}
    assert seen == {lab.proxy.settings.egress_address}  # the origin only ever saw the proxy


async def test_without_the_mitm_ca_the_pull_fails_with_unknown_authority(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[1]
    await configure_containerd(lab, node, proxy=lab.proxy_url, trust_mitm=False)
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/library/pause:3.9")
    assert result.exit_status == 1
    assert "x509: certificate signed by unknown authority" in result.stderr
    assert 'failed to resolve reference \\"quay.io/library/pause:3.9\\"' in result.stderr
    await wait_until(lambda: any(f["kind"] == "tls-failed" for f in flows_from(lab, node, INTERNET_REGISTRY)),
                     what="the proxy to log the rejected handshake")


async def test_no_proxy_registry_is_reached_directly(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await configure_containerd(lab, node, proxy=lab.proxy_url,
                               no_proxy=f"{INTRANET_REGISTRY},{INTRANET_REGISTRY_IP}", trust_mitm=True)
    before = len(lab.proxy.flows())
    for reference in (f"{INTRANET_REGISTRY}/corp/agent:1.0", f"{INTRANET_REGISTRY_IP}/openshift/windows-test:latest"):
        result = await run_powershell(lab.fleet, node, f"crictl pull {reference}")
        assert result.exit_status == 0, result.stderr
    sources = {r.source for r in lab.origins.access_log(INTRANET_REGISTRY)}
    assert sources == {node.address}
    assert not [f for f in lab.proxy.flows()[before:] if f["host"] in (INTRANET_REGISTRY, INTRANET_REGISTRY_IP)]


async def test_bypassing_the_proxy_for_the_internet_is_refused_and_logged(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[2]
    await configure_containerd(lab, node, proxy=None, trust_mitm=False)
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/library/pause:3.9")
    assert result.exit_status == 1
    assert "read: connection reset by peer" in result.stderr
    violations = [v for v in lab.origins.violations() if v.source == node.address]
    assert violations and violations[-1].origin == "internet-registry"


async def test_unknown_destinations_fail_like_dns_without_traffic(lab: TrafficLab) -> None:
    await configure_containerd(lab, lab.fleet.nodes[2], proxy=None, trust_mitm=False)
    direct = await run_powershell(lab.fleet, lab.fleet.nodes[2], "crictl pull nothere.example.org/x:1")
    assert "dial tcp: lookup nothere.example.org: no such host" in direct.stderr
    await configure_containerd(lab, lab.fleet.nodes[0], proxy=lab.proxy_url, trust_mitm=True)
    proxied = await run_powershell(lab.fleet, lab.fleet.nodes[0], "crictl pull nothere.example.org/x:1")
    assert 'Head \\"https://nothere.example.org/v2/x/manifests/1\\": Bad Gateway' in proxied.stderr
    node = lab.fleet.nodes[0]
    via_proxy = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS https://nothere.example.org/")
    assert "curl: (56) CONNECT tunnel failed, response 502" in via_proxy.stderr
    refused = [f for f in lab.proxy.flows() if f["host"] == "nothere.example.org"]
    assert refused and refused[-1]["status"] == 502 and "no such host" in str(refused[-1]["error"])


async def test_curl_uses_the_session_environment_and_curl_rules(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[3]
    await trust_the_mitm_ca(lab, node)
    ok = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS -v https://www.example.com/")
    assert ok.stdout.strip() == "hello from www.example.com", ok.stderr
    assert "* Uses proxy env variable https_proxy ==" in ok.stderr  # names are case-insensitive on Windows
    assert "> CONNECT www.example.com:443 HTTP/1.1" in ok.stderr
    bypass = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS --noproxy '*' https://www.example.com/")
    assert "curl: (35)" in bypass.stderr  # the firewall resets a direct connection
    intranet = await run_powershell(lab.fleet, node, "curl.exe -s -w '%{http_code}' -o C:\\k\\page.html https://intranet.corp.internal/")
    assert intranet.stdout == "200\r\n" and node.machine.filesystem.read_bytes(r"C:\k\page.html").startswith(b"hello")


async def test_plain_http_takes_http_proxy_in_absolute_form(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[3]
    url = f"http://{INTERNET_HTTP_SITE}/whoami"
    # HTTPS_PROXY alone says nothing about http:// URLs: curl goes direct and the firewall resets it
    direct = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS {url}")
    assert "curl: (56) Recv failure: Connection was reset" in direct.stderr, direct.stderr
    assert not flows_from(lab, node, INTERNET_HTTP_SITE)
    assert [v.origin for v in lab.origins.violations() if v.source == node.address][-1] == "internet-http-site"
    proxied = await run_powershell(lab.fleet, node, f"$env:HTTP_PROXY = '{lab.proxy_url}'; curl.exe -sS -v {url}")
    assert proxied.exit_status == 0, proxied.stderr
    assert f"> GET {url} HTTP/1.1" in proxied.stderr  # absolute form, no CONNECT
    assert "CONNECT" not in proxied.stderr
    seen = lab.origins.access_log(INTERNET_HTTP_SITE)[-1]
    assert seen.source == lab.proxy.settings.egress_address and seen.sni is None  # the origin saw the proxy
    flows = flows_from(lab, node, INTERNET_HTTP_SITE)
    assert [(f["kind"], f["scheme"], f["method"], f["path"], f["status"]) for f in flows] == [
        ("request", "http", "GET", "/whoami", 200)]


async def test_invoke_web_request_ignores_proxy_variables(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[3]
    await trust_the_mitm_ca(lab, node)  # for the explicit -Proxy request at the end
    await run_powershell(lab.fleet, node, f"[Environment]::SetEnvironmentVariable('HTTPS_PROXY', '{lab.proxy_url}', 'Machine')")
    ignored = await run_powershell(lab.fleet, node, "Invoke-WebRequest https://www.example.com/ -UseBasicParsing")
    assert "The underlying connection was closed: An unexpected error occurred on a receive." in ignored.stderr
    assert any(v.source == node.address and v.origin == "internet-site" for v in lab.origins.violations())
    explicit = await run_powershell(lab.fleet, node, f"(iwr https://www.example.com/ -UseBasicParsing -Proxy {lab.proxy_url}).Content")
    assert explicit.stdout.strip() == "hello from www.example.com", explicit.stderr


async def test_fault_modes(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await trust_the_mitm_ca(lab, node)
    command = f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS https://www.example.com/"
    try:
        await lab.proxy.set_faults(bad_gateway=["www.example.*"])
        assert "response 502" in (await run_powershell(lab.fleet, node, command)).stderr
        await lab.proxy.set_faults(bad_gateway=[], refuse=True)
        assert "curl: (7)" in (await run_powershell(lab.fleet, node, command)).stderr
        state = await lab.proxy.set_faults(refuse=False, delay=0.2)
        assert state == {"refuse": False, "bad_gateway": [], "delay": 0.2}
        assert (await run_powershell(lab.fleet, node, command)).stdout.strip() == "hello from www.example.com"
    finally:
        await lab.proxy.set_faults(refuse=False, bad_gateway=[], delay=0)


async def test_proxy_down_and_back(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await configure_containerd(lab, node, proxy=lab.proxy_url, trust_mitm=True)
    await lab.proxy.go_down()
    try:
        result = await run_powershell(lab.fleet, node, "crictl pull quay.io/openshift/windows-test:latest")
        assert f"proxyconnect tcp: dial tcp {PROXY_NAME}:{lab.proxy.port}: connect: connection refused" in result.stderr
    finally:
        await lab.proxy.come_back()
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/openshift/windows-test:latest")
    assert result.exit_status == 0, result.stderr


async def test_flow_log_and_stream_file_carry_no_credentials(lab: TrafficLab, tmp_path: Path) -> None:
    from mitmproxy.io import FlowReader

    node = lab.fleet.nodes[3]
    await trust_the_mitm_ca(lab, node)
    fetched = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS https://www.example.com/")
    assert fetched.exit_status == 0, fetched.stderr
    await wait_until(lambda: any(f["host"] == "www.example.com" for f in lab.proxy.flows()), what="the flow log")
    with lab.proxy.stream_path.open("rb") as handle:
        flows = list(FlowReader(handle).stream())
    assert flows, "the stream file opens with mitmproxy's reader (mitmweb --rfile)"
    fields = {"time", "kind", "client", "client_port", "connect_target", "scheme", "method", "host",
              "port", "path", "status", "intercepted", "error"}
    assert all(set(f) == fields for f in lab.proxy.flows())


async def test_proxy_authentication(lab: TrafficLab, tmp_path: Path) -> None:
    listen = lab.network.allocate(PROXY_NETWORK)
    secured = ProxyServer(ProxySettings(tmp_path / "auth", lab.network, lab.public_ca.cert_pem.bytes(),
                                        listen_address=listen, egress_address=lab.proxy.settings.egress_address,
                                        auth="fleet:s3cret", mitm_ca=lab.proxy.mitm_ca))
    async with secured:
        assert secured.pid is not None
        command_line = Path(f"/proc/{secured.pid}/cmdline").read_bytes()
        assert b"s3cret" not in command_line  # visible to every local user: the secret is in a 0600 file
        assert secured.auth_path.stat().st_mode & 0o777 == 0o600
        lab.network.add("auth-proxy.corp.internal", secured.port, secured.endpoint, "proxy")
        secured.publish_table()
        node = lab.fleet.nodes[0]
        await trust_the_mitm_ca(lab, node)
        base = f"http://auth-proxy.corp.internal:{secured.port}"
        denied = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{base}'; curl.exe -sS https://www.example.com/")
        assert "curl: (56) CONNECT tunnel failed, response 407" in denied.stderr
        allowed = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = 'http://fleet:s3cret@auth-proxy.corp.internal:{secured.port}';"
                                                "curl.exe -sS -v https://www.example.com/")
        assert allowed.stdout.strip() == "hello from www.example.com", allowed.stderr
        assert "s3cret" not in allowed.stderr  # the -v trace redacts the proxy URL
        log = secured.flow_log_path.read_text()
        assert "s3cret" not in log and "407" in log
        import base64

        dump = secured.stream_path.read_bytes()
        assert b"www.example.com" in dump  # the dump file has the flow, but not the Basic credentials
        assert b"s3cret" not in dump and base64.b64encode(b"fleet:s3cret") not in dump
    assert not secured.running


async def test_stopping_the_proxy_leaves_nothing_behind(lab: TrafficLab, tmp_path: Path) -> None:
    import socket

    listen = lab.network.allocate(PROXY_NETWORK)
    proxy = ProxyServer(ProxySettings(tmp_path / "p", lab.network, lab.public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=lab.proxy.settings.egress_address))
    await proxy.start()
    pid = proxy._process.pid  # type: ignore[union-attr]
    await proxy.stop()
    with socket.socket() as probe:
        probe.bind((listen, proxy.port))  # the port is free again
    import os

    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert proxy.started_seconds is not None and proxy.started_seconds > 0
