"""containerd's pull against the lab's real registry origin: resolve, manifest, blobs by digest,
each request recorded; the proxy chosen by Go's rules from the runtime's environment; failures in
Go's words."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import trustme

from proxyfleet.core.imagereference import parse_image
from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
from proxyfleet.simulators.egress.imagepull import PullFailed, go_error, pull_image
from proxyfleet.simulators.egress.records import EgressRecord
from proxyfleet.simulators.network import PROXY_NETWORK, LabNetwork
from proxyfleet.simulators.origins.catalog import INTRANET_REGISTRY, Origins, start_origins

pytestmark = pytest.mark.asyncio(loop_scope="module")
PUBLIC_CA = trustme.CA(organization_name="proxyfleet public roots")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def origins() -> AsyncIterator[tuple[LabNetwork, Origins]]:
    network = LabNetwork()
    running = await start_origins(network, PUBLIC_CA, network.allocate(PROXY_NETWORK))
    try:
        yield network, running
    finally:
        await running.stop()


def _trusting_public_roots() -> ssl.SSLContext:
    return trust_context([ssl.PEM_cert_to_DER_cert(PUBLIC_CA.cert_pem.bytes().decode())])


async def test_a_pull_fetches_manifest_and_blobs_checked_by_digest(origins: tuple[LabNetwork, Origins]) -> None:
    network, running = origins
    records: list[EgressRecord] = []
    reference = f"{INTRANET_REGISTRY}/corp/agent:1.0"
    async with EgressSession(network, "127.0.0.1", _trusting_public_roots(), client="containerd",
                             recorder=records.append, session=7) as session:
        image_id = await pull_image(session, {}, parse_image(reference))
    image = running.images[reference]
    assert image_id in image.blobs and image.blobs[image_id].startswith(b"{")  # the config's digest
    assert [r.method for r in records[:2]] == ["HEAD", "GET"]
    assert {r.url.rsplit("/", 1)[1] for r in records[2:]} == set(image.blobs)
    assert all(r.session == 7 and r.mode == "direct" and r.status == 200 for r in records)


async def test_a_proxy_in_the_environment_is_used_by_gos_rules(origins: tuple[LabNetwork, Origins]) -> None:
    network, _ = origins
    environment = {"https_proxy": "http://proxy.corp.internal:3128", "NO_PROXY": ".example.com"}
    async with EgressSession(network, "127.0.0.1", _trusting_public_roots()) as session:
        with pytest.raises(PullFailed) as failed:
            await pull_image(session, environment, parse_image(f"{INTRANET_REGISTRY}/corp/agent:1.0"))
    assert str(failed.value) == (
        f'failed to resolve reference "{INTRANET_REGISTRY}/corp/agent:1.0": failed to do request: Head '
        f'"https://{INTRANET_REGISTRY}/v2/corp/agent/manifests/1.0": proxyconnect tcp: dial tcp: lookup '
        "proxy.corp.internal: no such host")


async def test_an_untrusted_registry_fails_as_go_says(origins: tuple[LabNetwork, Origins]) -> None:
    network, _ = origins
    async with EgressSession(network, "127.0.0.1", trust_context([])) as session:
        with pytest.raises(PullFailed, match="x509: certificate signed by unknown authority"):
            await pull_image(session, {}, parse_image(f"{INTRANET_REGISTRY}/corp/agent:1.0"))
        with pytest.raises(PullFailed) as missing:
            await pull_image(session, {}, parse_image("nothere.example.org/x:1"))
    assert missing.value.code == "Unknown" and missing.value.args[0].endswith(
        "dial tcp: lookup nothere.example.org: no such host")


async def test_a_failed_tls_to_an_https_proxy_reads_like_go() -> None:
    session = EgressSession(None, "127.10.0.1", trust_context([]))
    error = EgressError("proxy-tls-unknown-authority", "self-signed")
    assert go_error(error, session, "quay.io", 443, "https://proxy.corp.internal:3128") == (
        "proxyconnect tcp: tls: failed to verify certificate: x509: certificate signed by unknown authority")
    wrong_name = EgressError("proxy-tls-hostname", "mismatch")
    assert go_error(wrong_name, session, "quay.io", 443, "https://proxy.corp.internal:3128").endswith(
        "x509: certificate is not valid for proxy.corp.internal")
