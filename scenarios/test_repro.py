"""A customer's proxy settings on the lab (``proxyfleet repro``): their Proxy spec verbatim, their
CA bundle plus the lab proxy's MITM CA, their proxy host names resolving to the lab proxy."""

from typing import Any

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.scenarios.actions import join


@pytest.mark.workflow("repro")
async def test_customer_settings(conformance: Conformance, proxyfleet_repro: dict[str, Any]) -> None:
    lab = conformance.lab
    await join(conformance)
    proxy = proxyfleet_repro.get("proxy")
    if proxy:
        async def action() -> None:
            # The lab proxy intercepts with its own CA, so nodes must trust it next to the customer's.
            await conformance.set_trusted_ca([proxyfleet_repro.get("bundle", "").encode(), lab.mitm_ca_pem])
            await conformance.set_proxy(proxy.get("httpProxy", ""), proxy.get("noProxy", ""),
                                        https_url=proxy.get("httpsProxy", ""))

        await conformance.step("customer proxy applied", action)
    conformance.assert_passed()
