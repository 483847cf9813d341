"""Drift: on configured nodes, someone logged on to the host deletes the proxy's CA from the Root
store and a proxy variable from the machine environment; on Linux nodes (a mixed fleet), the CA's
anchor (the bundle extracted again without it) and the runtime's proxy drop-in (the runtime
restarted without it). The reconciler must repair each at its next resync (WMCO compares its own
record, not the store, so it never restores the certificate).
Then the operator's ``trusted-ca`` ConfigMap is deleted, and later loses its injection label: it
must be restored each time, and nodes keep their certificates meanwhile (a missing bundle is not
an empty one)."""

import pytest

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.conformance.expectations import thumbprint_of
from proxyfleet.scenarios.actions import join, linux_anchor_removed, linux_runtime_unproxied


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
        if conformance.linux_nodes:
            await conformance.on_host(conformance.linux_nodes[0], linux_anchor_removed(lab.mitm_ca_pem))
            await conformance.on_host(conformance.linux_nodes[-1], linux_runtime_unproxied())

    linux = " (on Linux: the CA's anchor, the runtime's drop-in)" if conformance.linux_nodes else ""
    await conformance.step(f"the proxy CA and NO_PROXY deleted on the hosts{linux}", drift)
    await conformance.step("trusted-ca deleted", lambda: conformance.tamper_trusted_ca(delete=True))
    await conformance.step("trusted-ca injection label removed", lambda: conformance.tamper_trusted_ca(delete=False))
    conformance.assert_passed()
