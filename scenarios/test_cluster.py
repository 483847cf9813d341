"""The workflows against an existing cluster (``proxyfleet conformance --kubeconfig``): the cluster's
own reconciler is judged through the API and SSH only. Each scenario begins from "no proxy" (so
each is whole on its own), publishes the proxy the user named beside a company CA the run makes,
and changes only what an administrator changes: the Proxy, its trusted CA ConfigMap. The CLI puts
the cluster's objects back afterwards.

The proxy CAs the user gave stay in the bundle throughout; the run's company CA beside them is what
rotates (its key is the run's, the proxy's is not)."""

from __future__ import annotations

import pytest
import trustme

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.conformance.clustertarget import RUN_CA
from proxyfleet.simulators.pki import renewed_ca

# Entries NO_PROXY gains in the change workflow: no destination of the run matches them, so routes
# stay as they were and only the variable changes — a rollout every node must take. The IPv6 range
# is in upper case, as administrators write it: the cluster keeps it as written (names must be
# lower case), and so must every node (nothing may "tidy" NO_PROXY).
CHANGED_ENTRY = "proxyfleet-change.invalid,FD00:AB::/64"


def _company_ca(year: int) -> trustme.CA:
    return trustme.CA(organization_name=f"proxyfleet run company CA {year}", key_type=trustme.KeyType.RSA)


async def _start_without_proxy(conformance: Conformance) -> None:
    await conformance.step("starting point: no proxy", lambda: conformance.set_proxy("", trusted_ca=None))


async def _add_proxy(conformance: Conformance, company: trustme.CA) -> None:
    cluster = conformance.cluster
    assert cluster is not None

    async def action() -> None:
        await conformance.set_trusted_ca([*cluster.proxy_ca_pems, company.cert_pem.bytes()], name=RUN_CA)
        await conformance.set_proxy(cluster.proxy_url, cluster.no_proxy, trusted_ca=RUN_CA,
                                    https_url=cluster.https_url)

    await conformance.step("proxy added", action)


@pytest.mark.cluster
@pytest.mark.workflow("runtime-add")
async def test_cluster_proxy_added_at_runtime(cluster_conformance: Conformance) -> None:
    conformance = cluster_conformance
    await _start_without_proxy(conformance)
    # As on the lab: an instance is in maintenance when the proxy arrives; its reboot must not end
    # the administrator's cordon (the real operator's uncordons unconditionally). One that is
    # schedulable is taken (a cordon already there is an administrator's and judged the same way);
    # the CLI's restore lifts this one should the run end before the last step does. A Windows one:
    # the cordon's survival is the Windows operator's contract; what the Machine Config Operator's
    # drain does with a Linux worker's cordon is its own (not the contract this run judges).
    schedulable = [a for a in conformance.windows_addresses if a not in conformance.admin_cordoned][-1:]
    if schedulable:
        await conformance.step("an instance cordoned for maintenance", lambda: conformance.cordon(schedulable))
    await _add_proxy(conformance, _company_ca(2026))
    if schedulable:
        await conformance.step("maintenance over: the instance uncordoned",
                               lambda: conformance.cordon(schedulable, cordoned=False))
    conformance.assert_passed()


@pytest.mark.cluster
@pytest.mark.workflow("change")
async def test_cluster_proxy_changed_at_runtime(cluster_conformance: Conformance) -> None:
    conformance = cluster_conformance
    cluster = conformance.cluster
    assert cluster is not None
    old = _company_ca(2026)
    await _start_without_proxy(conformance)
    await _add_proxy(conformance, old)
    changed = ",".join(filter(None, [cluster.no_proxy, CHANGED_ENTRY]))
    await conformance.step("NO_PROXY changed", lambda: conformance.set_proxy(
        cluster.proxy_url, changed, trusted_ca=RUN_CA, https_url=cluster.https_url))
    # Some clusters set only httpsProxy: nothing may invent an HTTP_PROXY for them.
    await conformance.step("httpProxy unset (httpsProxy only)", lambda: conformance.set_proxy(
        "", changed, trusted_ca=RUN_CA, https_url=cluster.https_url))
    if cluster.second_proxy_url:
        # httpProxy and httpsProxy apart (a reconciler must not derive one from the other), then both
        await conformance.step("httpProxy changed (httpsProxy kept)", lambda: conformance.set_proxy(
            cluster.second_proxy_url, changed, trusted_ca=RUN_CA, https_url=cluster.https_url))
        await conformance.step("proxy URL changed", lambda: conformance.set_proxy(
            cluster.second_proxy_url, changed, trusted_ca=RUN_CA))
    kept = list(cluster.proxy_ca_pems)
    new = _company_ca(2027)
    await conformance.step("new company CA added to the bundle", lambda: conformance.set_trusted_ca(
        [*kept, old.cert_pem.bytes(), new.cert_pem.bytes()], name=RUN_CA))
    await conformance.step("old company CA removed from the bundle", lambda: conformance.set_trusted_ca(
        [*kept, new.cert_pem.bytes()], name=RUN_CA))
    renewed = renewed_ca(new)
    await conformance.step("renewed company CA (same subject) added", lambda: conformance.set_trusted_ca(
        [*kept, new.cert_pem.bytes(), renewed.cert_pem.bytes()], name=RUN_CA))
    await conformance.step("expiring company CA (same subject) removed", lambda: conformance.set_trusted_ca(
        [*kept, renewed.cert_pem.bytes()], name=RUN_CA))
    conformance.assert_passed()


@pytest.mark.cluster
@pytest.mark.workflow("remove")
async def test_cluster_proxy_then_trusted_ca_removed(cluster_conformance: Conformance) -> None:
    conformance = cluster_conformance
    await _start_without_proxy(conformance)
    await _add_proxy(conformance, _company_ca(2026))
    await conformance.step("proxy removed", lambda: conformance.set_proxy("", trusted_ca=RUN_CA))
    await conformance.step("trustedCA removed", lambda: conformance.set_proxy("", trusted_ca=None))
    conformance.assert_passed()


@pytest.mark.cluster
@pytest.mark.workflow("drift")
async def test_cluster_trusted_ca_configmap_restored(cluster_conformance: Conformance) -> None:
    """The API half of the lab's drift: the operator's ``trusted-ca`` ConfigMap deleted, then its
    injection label removed (what a clean-up script or a GitOps prune does); the operator must put
    it back each time, and nodes keep their certificates meanwhile (WMCO's own e2e deletes it the
    same way). The hosts' half is the lab's alone: its repair waits for the operator's periodic
    resync, hours on a real cluster, not minutes. The CLI's restore brings the ConfigMap back
    should the operator not."""
    conformance = cluster_conformance
    await _start_without_proxy(conformance)
    await _add_proxy(conformance, _company_ca(2026))
    await conformance.step("trusted-ca deleted", lambda: conformance.tamper_trusted_ca(delete=True))
    await conformance.step("trusted-ca injection label removed", lambda: conformance.tamper_trusted_ca(delete=False))
    conformance.assert_passed()
