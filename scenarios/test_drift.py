"""Drift: on configured nodes, someone logged on to the host deletes the proxy's CA from the Root
store and a proxy variable from the machine environment. The reconciler must repair both at its
next resync (WMCO compares its own record, not the store, so it never restores the certificate).
Then the operator's ``trusted-ca`` ConfigMap is deleted, and later loses its injection label: it
must be restored each time, and nodes keep their certificates meanwhile (a missing bundle is not
an empty one)."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.conformance.expectations import thumbprint_of
from proxyfleet.scenarios.actions import join


@pytest.mark.rollouts(2)
@pytest.mark.workflow("drift")
@pytest.mark.lab(install_proxy=True, resync_period=3.0)
async def test_out_of_band_changes_are_repaired(conformance: Conformance) -> None:
    lab = conformance.lab
    await join(conformance)
    ca = thumbprint_of(lab.mitm_ca_pem)
    first, last = conformance.nodes[0], conformance.nodes[-1]

    async def drift() -> None:
        await conformance.on_host(first, f"Remove-Item -LiteralPath 'Cert:\\LocalMachine\\Root\\{ca}'\n"
                                         "@{ ok = $true } | ConvertTo-Json")
        await conformance.on_host(last, "[Environment]::SetEnvironmentVariable('NO_PROXY', $null, 'Machine')\n"
                                        "@{ ok = $true } | ConvertTo-Json")

    await conformance.step("the proxy CA and NO_PROXY deleted on the hosts", drift)
    await conformance.step("trusted-ca deleted", lambda: conformance.tamper_trusted_ca(delete=True))
    await conformance.step("trusted-ca injection label removed", lambda: conformance.tamper_trusted_ca(delete=False))
    conformance.assert_passed()
