"""The reference reconciler drives Linux nodes beside Windows ones, the Machine Config Operator's
way, in the same pass, queue and budget: a proxy added reaches CRI-O and the kubelet after one
drain and reboot per node; a CA rotation is extracted and CRI-O restarted with no reboot; the
proxy removed takes its files away after one more reboot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trustme

from proxyfleet.core.certificates import Certificate, certificates_in_bundle
from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.reconciler import Reconciler, ReconcilerSettings, make_reconciler
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.truststores import RHCOS
from tests.support import wait_until

PROXY_URL = "http://proxy.corp.internal:3128"
CANNOT_MOUNT = host_cannot_mount()
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}")


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=1, linux_nodes=2, proxy=False, reboot_duration=0.3,
                               shutdown_delay=0.15)) as running:
        yield running


def reconciler(lab: Lab, **settings: Any) -> Reconciler:
    options: dict[str, Any] = dict(ssh_port=lab.fleet.port, resync_period=2.0, max_unavailable=1, settle_delay=0.3,
                                   reboot_timeout=30, backoff_base=0.2, backoff_max=1.0)
    options.update(settings)
    return make_reconciler(lab.api(), ReconcilerSettings(**options))


def held(node: LinuxNode, unit: str) -> dict[str, str]:
    process = node.model.systemd.running.get(unit)
    return dict(process.environment) if process is not None else {}


def main_pid(node: LinuxNode, unit: str) -> int | None:
    """The unit's running process (None: not running, say mid-restart)."""
    process = node.model.systemd.running.get(unit)
    return process.pid if process is not None else None


def restarted(node: LinuxNode, unit: str, old: int | None) -> bool:
    """Whether the unit runs again as a process other than ``old`` (mid-restart it runs as none)."""
    pid = main_pid(node, unit)
    return pid is not None and pid != old


def extracted(node: LinuxNode) -> set[str]:
    return {c.thumbprint for c in certificates_in_bundle((node.root / RHCOS.bundle.lstrip("/")).read_bytes())}


async def configured(rec: Reconciler, members: list[LinuxNode], proxy: str | None) -> bool:
    for node in members:
        record = rec.records.get(node.config.address)
        if record is None or record.state != "configured":
            return False
        if any(held(node, unit).get("HTTPS_PROXY") != proxy or held(node, unit).get("https_proxy") != proxy
               for unit in ("crio.service", "kubelet.service")):
            return False
    return True


async def test_a_proxy_added_rotated_and_removed_on_linux_nodes(lab: Lab) -> None:
    members = list(lab.fleet.linux_nodes)
    first_ca, second_ca = trustme.CA(), trustme.CA()
    await admin.set_linux_instances(lab.api(), [(n.config.address, "core") for n in members])
    async with reconciler(lab) as rec:
        await wait_until(lambda: configured(rec, members, None), what="proxy-less Linux nodes")
        assert all(len(n.boots) == 1 for n in members)  # nothing to change: no reboot

        await admin.set_trusted_ca(lab.api(), first_ca.cert_pem.bytes().decode())
        await admin.set_proxy(lab.api(), http_proxy=PROXY_URL, https_proxy=PROXY_URL, no_proxy=".corp",
                              trusted_ca="corp-ca")
        await wait_until(lambda: configured(rec, members, PROXY_URL), what="the proxy on every Linux node")
        first = Certificate.from_pem(first_ca.cert_pem.bytes()).thumbprint
        for node in members:
            assert len(node.boots) == 2  # one drain and reboot for the change
            assert first in extracted(node)
            assert (node.root / "etc/mco/proxy.env").stat().st_mode & 0o777 == 0o600
        assert rec.max_concurrent_reboots == 1  # maxUnavailable

        reboots = [len(n.boots) for n in members]
        crio_pids = [main_pid(n, "crio.service") for n in members]
        assert None not in crio_pids
        await admin.set_trusted_ca(lab.api(), second_ca.cert_pem.bytes().decode())  # rotation
        second = Certificate.from_pem(second_ca.cert_pem.bytes()).thumbprint
        await wait_until(lambda: all(second in extracted(n) and first not in extracted(n) for n in members),
                         what="the rotated CA extracted")
        await wait_until(lambda: all(restarted(n, "crio.service", old) for n, old in zip(members, crio_pids, strict=True)),
                         what="CRI-O restarted")
        assert [len(n.boots) for n in members] == reboots  # the MCO's rebootless CA change

        await admin.set_proxy(lab.api())  # removal
        await wait_until(lambda: configured(rec, members, None), what="the proxy gone from every Linux node")
        for node in members:
            assert not (node.root / "etc/systemd/system/crio.service.d/10-mco-default-env.conf").exists()
            assert second not in extracted(node)
