"""Workflow 3a: the proxy changes at runtime — its URL (to a proxy whose credentials are
PowerShell code), a destination moving out of and back into NO_PROXY, and two CA rotations in
which the proxy switches to a new MITM CA between adding the new and removing the old
certificate: first to a differently named CA, then to that CA renewed under the same subject
(the old certificate must go by thumbprint: removing by subject takes the renewed one too)."""

import pytest
import trustme

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import add_proxy, change_proxy, join
from proxyfleet.simulators.pki import renewed_ca
from proxyfleet.simulators.proxy.runner import ProxyServer

ONLY_INTRANET_SITE = "intranet.corp.internal"


@pytest.mark.rollouts(4)
@pytest.mark.workflow("change")
@pytest.mark.lab(second_proxy=True)
async def test_proxy_url_and_noproxy_change_at_runtime(conformance: Conformance) -> None:
    lab = conformance.lab
    assert lab.proxy2 is not None
    await join(conformance)
    await add_proxy(conformance)
    await change_proxy(conformance, lab.proxy2_url, name="proxy URL changed (credentials with $(…) and ')")
    # registry.corp.internal leaves NO_PROXY: its pulls must now go through the proxy, then back.
    await change_proxy(conformance, lab.proxy2_url, ONLY_INTRANET_SITE, name="intranet registry leaves NO_PROXY")
    await change_proxy(conformance, lab.proxy2_url, name="intranet registry back in NO_PROXY")
    conformance.assert_passed()


@pytest.mark.rollouts(3)
@pytest.mark.workflow("change")
async def test_proxy_ca_rotation_at_runtime(conformance: Conformance) -> None:
    lab = conformance.lab
    # With the lab's proxy, its MITM CA rotates and the proxy switches to each new one. A vendor's
    # proxy keeps its own CAs (interception: its key is the vendor's; its TLS listener's), which
    # stay in the bundle throughout; the company CA beside them rotates the same way, and the
    # reconciler's handling is judged the same.
    own = lab.proxy if isinstance(lab.proxy, ProxyServer) else None
    kept = lab.fixed_proxy_ca_pems()
    await join(conformance)
    await add_proxy(conformance)
    if own is not None:
        old_ca = lab.mitm_ca_pem
    else:
        assert lab.settings.mitm_ca is not None  # the company CA a lab with a vendor proxy makes
        old_ca = lab.settings.mitm_ca.cert_pem.bytes()
    new_ca = trustme.CA(organization_name="proxyfleet corporate proxy 2027", key_type=trustme.KeyType.RSA)
    await conformance.step("new proxy CA added to the bundle",
                           lambda: conformance.set_trusted_ca([*kept, old_ca, new_ca.cert_pem.bytes()]))
    if own is not None:
        await lab.rotate_proxy_ca(own, new_ca)  # the proxy now signs with the new CA
    await conformance.step("old proxy CA removed from the bundle",
                           lambda: conformance.set_trusted_ca([*kept, new_ca.cert_pem.bytes()]))
    renewed = renewed_ca(new_ca)
    await conformance.step("renewed proxy CA (same subject) added to the bundle",
                           lambda: conformance.set_trusted_ca([*kept, new_ca.cert_pem.bytes(),
                                                               renewed.cert_pem.bytes()]))
    if own is not None:
        await lab.rotate_proxy_ca(own, renewed)
    await conformance.step("expiring proxy CA (same subject) removed from the bundle",
                           lambda: conformance.set_trusted_ca([*kept, renewed.cert_pem.bytes()]))
    conformance.assert_passed()
