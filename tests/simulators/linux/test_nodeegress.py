"""A Linux node's network clients over real SSH, through the lab's real network: curl reads the
environment of the process that ran it (lower-case ``http_proxy`` only; an unexported variable is
not seen) and the extracted bundle at every call; crictl pulls with the runtime's own process
environment and the CAs it loaded when it started. Judged by the lab's evidence: the node's
egress records, the proxy's flows, what the origins saw."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import asyncssh
import certifi
import pytest

from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.linux.nodeegress import CallerGone, caller_environment
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE, Flavour
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTRANET_REGISTRY
from tests.simulators.linux.egresslab import LinuxEgressLab, lab_fixture, node_fixture
from tests.simulators.linux.sessions import run_on
from tests.simulators.traffic import PROXY_NAME

CANNOT_MOUNT = host_cannot_mount()
pytestmark = [pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}"),
              pytest.mark.asyncio(loop_scope="module")]
SYSTEM_CAS = Path(certifi.where()).read_bytes()  # the lab's public CA is not among them
KEY = asyncssh.generate_private_key("ssh-ed25519")
PROXY = PROXY_NAME  # the proxy as the lab's table names it
IMAGE = f"{INTRANET_REGISTRY}/corp/agent:1.0"


Lab = LinuxEgressLab


lab = lab_fixture("linux-egress")
node = node_fixture(KEY, SYSTEM_CAS, "127.10.9.")


run = functools.partial(run_on, key=KEY)


def anchor_command(lab: Lab, flavour: Flavour) -> str:
    """Install the lab's public CA as an anchor (not yet extracted)."""
    name = "lab-public.crt"
    pem = lab.public_ca.cert_pem.bytes().decode()
    return f"cat > {flavour.trust.anchors}/{name} <<'EOF'\n{pem}EOF\n"


async def test_curl_reads_http_proxy_only_in_lower_case_and_only_if_exported(lab: Lab, node: LinuxNode) -> None:
    upper = await run(node, f"export HTTP_PROXY={lab.proxy_url}; curl -sS -o /dev/null -w '%{{http_code}}' "
                            f"http://{INTERNET_HTTP_SITE}/")
    lower = await run(node, f"export http_proxy={lab.proxy_url}; curl -sS -w '%{{http_code}}' -o /dev/null "
                            f"http://{INTERNET_HTTP_SITE}/")
    unexported = await run(node, f"http_proxy={lab.proxy_url}; curl -sS http://{INTERNET_HTTP_SITE}/")
    records = node.model.egress.records
    assert [r.mode for r in records] == ["direct", "absolute-form", "direct"]
    assert upper.exit_status != 0 and unexported.exit_status != 0  # the firewall lets only the proxy out
    assert (lower.exit_status, lower.stdout) == (0, "200"), lower.stderr
    assert records[1].proxy == f"{PROXY}:{lab.proxy.port}" and records[1].source == node.config.address
    assert all(r.client == "curl" for r in records)


async def test_curl_trusts_an_anchor_only_once_extracted(lab: Lab, node: LinuxNode) -> None:
    url = f"https://{INTRANET_REGISTRY}/v2/"
    before = await run(node, anchor_command(lab, RHCOS_NODE) + f"curl -sS -o /dev/null {url}")
    assert before.exit_status == 60, before.stderr
    assert before.stderr.startswith("curl: (60) SSL certificate problem: unable to get local issuer certificate\n")
    after = await run(node, f"update-ca-trust && curl -sS -o /tmp/v2 -w '%{{http_code}}' {url} && cd /tmp && "
                            f"curl -sS -o v2-again {url} && cmp v2 v2-again")
    assert (after.exit_status, after.stdout) == (0, "200"), after.stderr
    assert (node.root / "tmp/v2").is_file()  # -o wrote into the node's tree, where the shell would
    assert [r.status for r in node.model.egress.records] == [None, 200, 200]


@pytest.mark.parametrize("node", [DEBIAN_NODE], indirect=True)
async def test_debians_own_update_ca_certificates_makes_curl_trust_the_anchor(lab: Lab, node: LinuxNode) -> None:
    url = f"https://{INTRANET_REGISTRY}/v2/"
    before = await run(node, anchor_command(lab, DEBIAN_NODE) + f"curl -sS {url}")
    assert before.exit_status == 60, before.stderr
    after = await run(node, f"update-ca-certificates >/dev/null && curl -sS -o /dev/null -w '%{{http_code}}' {url}")
    assert (after.exit_status, after.stdout) == (0, "200"), after.stderr


async def test_crictl_pulls_with_the_runtimes_environment_and_the_cas_it_started_with(lab: Lab, node: LinuxNode) -> None:
    # the caller's proxy variables are not the runtime's: CRI-O pulls directly, and fails on the CA
    first = await run(node, anchor_command(lab, RHCOS_NODE) + f"update-ca-trust && export HTTPS_PROXY={lab.proxy_url}; "
                                                               f"crictl pull {IMAGE}")
    assert first.exit_status == 1 and "x509: certificate signed by unknown authority" in first.stderr, first.stderr
    assert first.stderr.startswith('time="') and "level=fatal" in first.stderr
    records = node.model.egress.records
    assert [(r.client, r.mode, r.error_kind) for r in records] == [("cri-o", "direct", "tls-unknown-authority")]
    # CRI-O loaded its CAs when it started: a restart is what brings the extracted anchor to it
    second = await run(node, f"systemctl restart crio && crictl pull {IMAGE} && crictl images")
    assert second.exit_status == 0, second.stderr
    image = lab.origins.images[IMAGE]
    config = next(d for d, blob in image.blobs.items() if blob.startswith(b"{"))
    assert second.stdout.startswith(f"Image is up to date for {config}\n")
    assert f"{INTRANET_REGISTRY}/corp/agent" in second.stdout and node.model.images == {IMAGE: config}


async def test_crictl_through_the_proxy_set_in_the_runtimes_unit(lab: Lab, node: LinuxNode) -> None:
    mitm = lab.proxy.mitm_ca_pem.decode()
    image = "quay.io/library/pause:3.9"
    drop_in = (f"mkdir -p /etc/systemd/system/crio.service.d && printf '[Service]\\nEnvironment=HTTPS_PROXY={lab.proxy_url}\\n'"
               " > /etc/systemd/system/crio.service.d/10-proxy.conf && "
               f"cat > /etc/pki/ca-trust/source/anchors/mitm.crt <<'EOF'\n{mitm}EOF\n"
               "update-ca-trust && systemctl daemon-reload && systemctl restart crio && ")
    pulled = await run(node, drop_in + f"crictl pull {image}")
    assert pulled.exit_status == 0, pulled.stderr
    records = node.model.egress.records
    assert records and all(r.mode == "connect" and r.status == 200 for r in records)
    assert {r.issuer for r in records} == {ssl_issuer(lab.proxy.mitm_ca_pem)}  # the proxy intercepted
    flows = [f for f in lab.proxy.flows() if f["client"] == node.config.address and f["host"] == "quay.io"]
    assert flows, "the proxy saw no request of the node's"


def ssl_issuer(pem: bytes) -> str:
    from cryptography import x509

    return x509.load_pem_x509_certificate(pem).subject.rfc4514_string()


async def test_crictl_with_the_runtime_stopped_is_a_dial_error(node: LinuxNode) -> None:
    result = await run(node, f"systemctl stop crio; crictl pull {IMAGE}")
    assert result.exit_status == 1
    assert "dial unix /var/run/crio/crio.sock: connect: no such file or directory" in result.stderr
    assert node.model.egress.records == []


async def test_a_process_of_another_session_is_refused() -> None:
    with pytest.raises(CallerGone, match="not of this node command's session"):
        caller_environment(os.getpid(), os.getsid(os.getpid()) + 1)
    environment = caller_environment(os.getpid(), os.getsid(os.getpid()))
    assert environment.get("PATH") == os.environ.get("PATH")
