"""Proxy shapes a real cluster accepts and a reconciler tends to "tidy": an ``httpsProxy`` without
``httpProxy`` (no ``HTTP_PROXY`` may appear on a node: OLM drops empty values, and a node that
invents one sends plain-HTTP egress where the administrator set no proxy), different URLs for the
two, a noProxy with spaces, an IPv6 CIDR, an IPv6 literal and duplicates (nodes carry exactly what
Proxy status says, byte for byte), and ``*``. Upper-case noProxy entries are not here: the
cluster refuses them (a DNS-1123 subdomain is lower case), as OpenShift's does. One shape per
scenario, each on its own lab (the later ones from a cluster installed with the proxy)."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.lab import DEFAULT_NO_PROXY
from proxyfleet.scenarios.actions import join

# Spaces after commas, an IPv6 CIDR and literal, an entry twice: status keeps the spaces and
# drops the duplicate (it is a sorted set), and a node must hold status exactly.
UNTIDY_NO_PROXY = f"{DEFAULT_NO_PROXY}, fd00:10::/64,2001:db8::7, registry.corp.internal,2001:db8::7"


@pytest.mark.rollouts(1)
@pytest.mark.workflow("proxy-shapes")
async def test_an_https_proxy_alone_and_an_untidy_noproxy_are_carried_exactly(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)

    async def https_only() -> None:
        await conformance.set_trusted_ca([lab.mitm_ca_pem])
        await conformance.set_proxy("", UNTIDY_NO_PROXY, https_url=lab.proxy_https_url)

    await conformance.step("httpsProxy only, untidy noProxy", https_only)
    conformance.assert_passed()


@pytest.mark.rollouts(1)
@pytest.mark.workflow("proxy-shapes")
@pytest.mark.lab(install_proxy=True, second_proxy=True)
async def test_different_http_and_https_proxies_are_carried_exactly(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)
    await conformance.step("different httpProxy and httpsProxy", lambda: conformance.set_proxy(
        lab.proxy2_url, UNTIDY_NO_PROXY, https_url=lab.proxy_https_url))
    conformance.assert_passed()


@pytest.mark.rollouts(1)
@pytest.mark.workflow("proxy-shapes")
@pytest.mark.lab(install_proxy=True)
async def test_noproxy_star_sends_everything_direct(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)
    await conformance.step("noProxy '*': everything direct", lambda: conformance.set_proxy(
        lab.proxy_url, "*", https_url=lab.proxy_https_url))
    conformance.assert_passed()
