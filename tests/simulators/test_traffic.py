"""Real traffic through the lab: the real mitmdump with a trustme MITM CA, HTTPS origins behind an
egress firewall, and nodes pulling images and fetching pages with their own clients."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.origins.catalog import (
    INTERNET_HTTP_SITE,
    INTERNET_REGISTRY,
)
from tests.simulators.traffic import (
    TrafficLab,
    configure_containerd,
    flows_from,
    trust_the_mitm_ca,
)
from tests.support import run_powershell, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


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
