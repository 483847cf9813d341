"""Workflow 3a: the proxy changes at runtime, one change per scenario (each on its own lab,
started from a cluster installed with the proxy, so a large fleet waits for no rollout but the
one judged): its URL (to a proxy whose credentials are PowerShell code), a destination leaving
NO_PROXY, one entering it (on a cluster installed without it there), and two CA rotations in
which the proxy switches to a new MITM CA between adding the new and removing the old
certificate: to a differently named CA, and to the CA renewed under the same subject (the old
certificate must go by thumbprint: removing by subject takes the renewed one too)."""

import pytest
import trustme

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.lab import DEFAULT_NO_PROXY, Lab
from proxyfleet.scenarios.actions import change_proxy, join
from proxyfleet.simulators.pki import renewed_ca
from proxyfleet.simulators.proxy.runner import ProxyServer

ONLY_INTRANET_SITE = "intranet.corp.internal"


@pytest.mark.rollouts(2)
@pytest.mark.workflow("change")
@pytest.mark.lab(install_proxy=True, second_proxy=True)
async def test_proxy_url_changed_at_runtime(conformance: Conformance) -> None:
    await join(conformance)
    await change_proxy(conformance, conformance.lab.proxy2_url, name="proxy URL changed (credentials with $(…) and ')")
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("change")
@pytest.mark.lab(install_proxy=True)
async def test_a_destination_leaves_noproxy(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)
    # registry.corp.internal leaves NO_PROXY: its pulls must now go through the proxy.
    await conformance.step("intranet registry leaves NO_PROXY", lambda: conformance.set_proxy(
        lab.proxy_url, ONLY_INTRANET_SITE, https_url=lab.proxy_https_url))
    conformance.assert_passed()


@pytest.mark.rollouts(2)
@pytest.mark.workflow("change")
@pytest.mark.lab(install_proxy=True, install_no_proxy=ONLY_INTRANET_SITE)
async def test_a_destination_enters_noproxy(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)  # pulls from registry.corp.internal go through the proxy
    # ... until it enters NO_PROXY: then they must go direct (the firewall lets the intranet through).
    await conformance.step("intranet registry enters NO_PROXY", lambda: conformance.set_proxy(
        lab.proxy_url, DEFAULT_NO_PROXY, https_url=lab.proxy_https_url))
    conformance.assert_passed()


def _installed_ca(lab: Lab) -> tuple[ProxyServer | None, trustme.CA]:
    """The lab's own proxy (None: a vendor's) and the CA the install trusts for it that rotates.
    With the lab's proxy, its MITM CA, and the proxy switches to each new one. A vendor's proxy
    keeps its own CAs (interception: its key is the vendor's; its TLS listener's), which stay in
    the bundle throughout; the company CA beside them rotates the same way, and the reconciler's
    handling is judged the same."""
    own = lab.proxy if isinstance(lab.proxy, ProxyServer) else None
    ca = own.mitm_ca if own is not None else lab.settings.mitm_ca
    assert ca is not None  # an install with the proxy trusts it (a vendor's lab makes the company CA)
    return own, ca


async def _rotate(conformance: Conformance, old: trustme.CA, new: trustme.CA, own: ProxyServer | None,
                  names: tuple[str, str]) -> None:
    """Add ``new`` to the bundle, switch the lab's proxy to it, remove ``old``: two steps, ``names``."""
    kept = conformance.lab.fixed_proxy_ca_pems()
    await conformance.step(f"{names[0]} added to the bundle", lambda: conformance.set_trusted_ca(
        [*kept, old.cert_pem.bytes(), new.cert_pem.bytes()]))
    if own is not None:
        await conformance.lab.rotate_proxy_ca(own, new)  # the proxy now signs with the new CA
    await conformance.step(f"{names[1]} removed from the bundle",
                           lambda: conformance.set_trusted_ca([*kept, new.cert_pem.bytes()]))


@pytest.mark.rollouts(1)
@pytest.mark.workflow("change")
@pytest.mark.lab(install_proxy=True)
async def test_proxy_ca_rotated_to_a_new_ca(conformance: Conformance) -> None:
    own, installed = _installed_ca(conformance.lab)
    await join(conformance)
    new_ca = trustme.CA(organization_name="proxyfleet corporate proxy 2027", key_type=trustme.KeyType.RSA)
    await _rotate(conformance, installed, new_ca, own, ("new proxy CA", "old proxy CA"))
    conformance.assert_passed()


@pytest.mark.rollouts(1)
@pytest.mark.workflow("change")
@pytest.mark.lab(install_proxy=True)
async def test_proxy_ca_renewed_under_the_same_subject(conformance: Conformance) -> None:
    own, installed = _installed_ca(conformance.lab)
    await join(conformance)
    await _rotate(conformance, installed, renewed_ca(installed), own,
                  ("renewed proxy CA (same subject)", "expiring proxy CA (same subject)"))
    conformance.assert_passed()
