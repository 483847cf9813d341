"""Every broken Linux reconciler is caught by the judge's Linux checks, naming the check, and the
correct ones — the reference (the MCO's drain and reboot) and a live apply done right (CAPI's
daemon-reload and restarts) — pass them all: a proxy with a percent-encoded password and a CA
added, then removed, on an RHCOS node of a real lab, looked at over SSH (``linuxprobe``) and judged
by ``linuxchecks``."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.nodessh import NodeAddress, NodeConnection
from proxyfleet.harness.conformance import checks, linuxchecks
from proxyfleet.harness.conformance.expectations import expected_from_cluster
from proxyfleet.harness.conformance.labhosts import LabHost
from proxyfleet.harness.conformance.linuxprobe import BundleCache, LinuxNodeState, observe
from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.reconciler import Reconciler, ReconcilerSettings
from proxyfleet.harness.reconciler.linuxvariants import LINUX_VARIANTS
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
pytestmark = [pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}"), pytest.mark.slow]
# A percent-encoded password: a bare % in a unit file is a specifier
PROXY_URL = "http://build:s3cr%40t@proxy.corp.internal:3128"

# variant -> the checks that must fail (every other must pass)
CAUGHT_BY = {
    "correct": set(),
    "linux-live-apply": set(),
    "linux-upper-case-only": {"service-environment", "unit-environment"},
    "linux-no-daemon-reload": {"service-environment", "units-loaded"},
    # the added CA reaches the bundle anyway (RHCOS extracts at every boot, and the proxy reboots the
    # node); the removed one stays trusted: with the anchors directory empty that boot unit is skipped
    "linux-no-update-ca-trust": {"certificates"},
    "linux-unquoted-environment": {"service-environment", "unit-environment"},
    "linux-restarts-runtime-only": {"service-environment", "services-restarted"},
    "linux-leaves-drop-in": {"files"},
    "linux-set-environment": {"unit-environment"},
}


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=0, linux_nodes=1, proxy=False, reboot_duration=0.3,
                               shutdown_delay=0.15)) as running:
        yield running


@dataclass
class Judge:
    lab: Lab
    node: LinuxNode
    cache: BundleCache

    async def look(self) -> LinuxNodeState:
        key = self.lab.fleet.client_key
        assert key is not None
        async with NodeConnection(NodeAddress(self.node.config.address, self.lab.fleet.port, "core"), key,
                                  self.node.host_key_openssh) as connection:
            return await observe(connection, self.cache)


def settled(rec: Reconciler, node: LinuxNode, changes: int) -> bool:
    record = rec.records.get(node.config.address)
    return (record is not None and record.changes > changes and record.state in ("configured", "failed")
            and node.is_listening and not node.rebooting)


@pytest.mark.parametrize("variant", sorted(CAUGHT_BY))
async def test_each_linux_variant_is_caught_by_its_check_and_the_correct_ones_pass(lab: Lab, variant: str) -> None:
    cls = Reconciler if variant == "correct" else LINUX_VARIANTS[variant]
    assert set(CAUGHT_BY) == {"correct", *LINUX_VARIANTS}  # every variant is tried here
    node = lab.fleet.linux_nodes[0]
    judge = Judge(lab, node, BundleCache())
    baseline = await judge.look()  # the node out of the box
    ca = trustme.CA()
    settings = ReconcilerSettings(ssh_port=lab.fleet.port, resync_period=2.0, max_unavailable=1, settle_delay=0.3,
                                  reboot_timeout=30, backoff_base=0.2, backoff_max=1.0, service_start_timeout=5.0)
    failed: set[str] = set()
    await admin.set_linux_instances(lab.api(), [(node.config.address, "core")])
    async with cls(lab.api(), settings) as rec:
        await wait_until(lambda: settled(rec, node, -1), what="the first pass")
        before = rec.records[node.config.address].changes
        started = dt.datetime.now(dt.UTC)
        await admin.set_trusted_ca(lab.api(), ca.cert_pem.bytes().decode())
        await admin.set_proxy(lab.api(), http_proxy=PROXY_URL, https_proxy=PROXY_URL, no_proxy=".corp",
                              trusted_ca="corp-ca")
        await wait_until(lambda: settled(rec, node, before), what="the proxy's pass")
        added = await judge.look()
        target = await expected_from_cluster(lab.api())  # Proxy status: the cluster's NO_PROXY entries too
        assert target.environment["HTTPS_PROXY"] == PROXY_URL
        assert Certificate.from_pem(ca.cert_pem.bytes()).thumbprint in target.bundle  # beside the system CAs
        verdicts = {
            "service-environment": linuxchecks.service_environment(added, target.environment),
            "units-loaded": linuxchecks.units_loaded(added),
            "certificates": linuxchecks.certificates(added, baseline.trusted | set(target.bundle), 1),
            "services-restarted": checks.services_restarted("environment", added.started(), started),
            # what the units' files give them at the next boot (the lab's evidence)
            "unit-environment": linuxchecks.unit_environment(LabHost.of(node).boot_environments(),
                                                             target.environment),
        }
        failed |= {name for name, verdict in verdicts.items() if not verdict.ok}

        before = rec.records[node.config.address].changes
        await admin.set_proxy(lab.api())
        await wait_until(lambda: settled(rec, node, before), what="the removal's pass")
        removed = await judge.look()
        verdicts = {"files": checks.leftover_files(removed.files, baseline.files),
                    "service-environment": linuxchecks.service_environment(removed, {}),
                    "certificates": linuxchecks.certificates(removed, baseline.trusted, 0),
                    "unit-environment": linuxchecks.unit_environment(LabHost.of(node).boot_environments(), {})}
        failed |= {name for name, verdict in verdicts.items() if not verdict.ok}
    assert failed == CAUGHT_BY[variant], (variant, failed, verdicts)
