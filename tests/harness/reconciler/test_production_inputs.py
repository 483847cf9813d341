"""Production-sized inputs: the injected bundle is the user's CAs plus the whole public root set,
NO_PROXY runs to 30,000 characters, nodes are a mix of cmd.exe and PowerShell default shells,
services start after sshd and Restart-Computer sometimes returns no exit status. The reference
reconciler converges in one reboot per node, sends no secret and no certificate on a command
line, and never removes a built-in root it did not import."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trustme

from proxyfleet.core.certificates import Certificate, certificates_in_bundle
from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.reconciler import Reconciler, ReconcilerSettings
from proxyfleet.simulators.windows.node import WindowsNode
from proxyfleet.simulators.windows.trust import windows_builtin_roots
from tests.support import wait_until

USER = "svc-proxy"
PASSWORD = "S3cr3t@p4ss"  # an "@" inside: Go splits userinfo at the last one
PROXY = f"http://{USER}:{PASSWORD}@proxy.corp.internal:3128"
NO_PROXY = ",".join(f"host-{i:04d}.apps.corp.internal" for i in range(1050))  # 30,449 characters


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    settings = LabSettings(nodes=4, proxy=False, reboot_duration=0.2, shutdown_delay=0.1,
                           default_shell="mixed", lost_exit_status_rate=0.5, service_stage_seconds=0.15)
    async with Lab(settings) as running:
        yield running


def _reconciler(lab: Lab) -> Reconciler:
    return Reconciler(lab.api(), ReconcilerSettings(
        ssh_port=lab.fleet.port, resync_period=2.0, max_unavailable=2, settle_delay=0.3, reboot_timeout=30,
        backoff_base=0.2, backoff_max=1.0, service_start_timeout=20, service_poll=0.1))


def _scripts(node: WindowsNode) -> list[str]:
    """Every command line the node received, with -EncodedCommand scripts decoded."""
    seen = []
    for line in node.command_lines:
        seen.append(line)
        for encoded in re.findall(r"-EncodedCommand (\S+)", line):
            seen.append(base64.b64decode(encoded).decode("utf-16-le"))
    return seen


async def _configured(lab: Lab, rec: Reconciler, members: list[WindowsNode], wanted: dict[str, Any]) -> bool:
    for node in members:
        record = rec.records.get(node.address)
        environment = node.machine.machine_environment()
        if record is None or record.state != "configured" or any(environment.get(k) != v for k, v in wanted.items()):
            return False
    return True


@pytest.mark.slow
async def test_a_151_certificate_bundle_and_a_30000_character_no_proxy_converge_in_one_reboot(lab: Lab) -> None:
    members = list(lab.fleet.nodes)
    assert {n.config.default_shell for n in members} == {"cmd", "powershell"}
    user_cas = [trustme.CA(organization_name=f"corp issuing CA {i}") for i in range(33)]
    user_bundle = "".join(ca.cert_pem.bytes().decode() for ca in user_cas)
    boots_before = {n.address: len(n.boots) for n in members}
    rec = _reconciler(lab)
    async with rec:
        await admin.set_instances(lab.api(), [(n.address, "Administrator") for n in members])
        await admin.set_trusted_ca(lab.api(), user_bundle)
        await admin.set_proxy(lab.api(), http_proxy=PROXY, https_proxy=PROXY, no_proxy=NO_PROXY, trusted_ca="corp-ca")
        status = await _published(lab, "host-1049.apps.corp.internal")
        wanted = {"HTTP_PROXY": PROXY, "HTTPS_PROXY": PROXY, "NO_PROXY": status["noProxy"]}
        assert len(wanted["NO_PROXY"]) > 30_000
        await wait_until(lambda: _configured(lab, rec, members, wanted), what="every node configured")
        bundle = await _injected_bundle(lab)
    assert len(bundle) >= 150
    assert sum(n.lost_exit_statuses for n in members) >= 1  # the harsh case really happened (seeded)
    for node in members:
        assert len(node.boots) - boots_before[node.address] == 1, node.name  # one reboot, lost exit status or not
        root = set(node.machine.stores.machine_root.thumbprints())
        assert bundle <= root
        for text in _scripts(node):
            for secret in (PASSWORD, USER, "BEGIN CERTIFICATE", "host-0001.apps.corp.internal"):
                assert secret not in text, (node.name, secret)
            assert all(base64.b64encode(c.der).decode()[20:80] not in text for c in user_cas_of(user_cas))
        assert all(len(line) <= 8191 for line in node.command_lines)  # fits cmd.exe's limit


async def _published(lab: Lab, entry: str) -> dict[str, str]:
    async def ready() -> bool:
        return entry in (await admin.proxy_status(lab.api())).get("noProxy", "").split(",")

    await wait_until(ready, what="Proxy status")
    return await admin.proxy_status(lab.api())


def user_cas_of(cas: list[trustme.CA]) -> list[Certificate]:
    return [Certificate.from_pem(ca.cert_pem.bytes()) for ca in cas]


async def _injected_bundle(lab: Lab) -> set[str]:
    from kubernetes import client

    configmap = await lab.call(client.CoreV1Api(lab.api()).read_namespaced_config_map, "trusted-ca",
                               "openshift-windows-machine-config-operator")
    return {c.thumbprint for c in certificates_in_bundle(configmap.data["ca-bundle.crt"].encode())}


@pytest.mark.slow
async def test_built_in_roots_in_the_bundle_survive_the_proxys_removal(lab: Lab) -> None:
    members = list(lab.fleet.nodes)
    builtins = {c.thumbprint for c in windows_builtin_roots()}
    corp = trustme.CA(organization_name="corp root")
    rec = _reconciler(lab)
    async with rec:
        await admin.set_instances(lab.api(), [(n.address, "Administrator") for n in members])
        await admin.set_trusted_ca(lab.api(), corp.cert_pem.bytes().decode())
        await admin.set_proxy(lab.api(), http_proxy=PROXY, https_proxy=PROXY, trusted_ca="corp-ca")
        status = await _published(lab, "localhost")
        configured = {"HTTP_PROXY": PROXY, "HTTPS_PROXY": PROXY, "NO_PROXY": status["noProxy"]}
        await wait_until(lambda: _configured(lab, rec, members, configured), what="configured")
        overlap = builtins & await _injected_bundle(lab)
        assert len(overlap) >= 15  # the bundle really carries roots Windows already had
        await admin.set_proxy(lab.api())
        removed = dict.fromkeys(configured)
        await wait_until(lambda: _configured(lab, rec, members, removed), what="removed")
    corp_thumbprint = Certificate.from_pem(corp.cert_pem.bytes()).thumbprint
    for node in members:
        root = set(node.machine.stores.machine_root.thumbprints())
        assert builtins <= root, node.name  # nothing Windows shipped was taken away
        assert corp_thumbprint not in root  # what the reconciler imported is gone
