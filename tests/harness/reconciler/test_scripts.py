"""The PowerShell the reconciler sends, run by the simulated interpreter: constant code, values as
data (never parsed as code), and one round trip that reports everything the reconciler needs."""

from __future__ import annotations

import json

import pytest
import trustme

from proxyfleet.core.nodessh import encoded_command
from proxyfleet.harness.reconciler.desired import ChangePlan, desired_state, plan_changes
from proxyfleet.harness.reconciler.scripts import (
    apply_data,
    apply_script,
    by_subject_apply_script,
    observe_script,
    unquoted_apply_script,
)
from proxyfleet.simulators.pki import renewed_ca
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.harness.reconciler.plans import cert, observed
from tests.support import ps, ps_with_data

NASTY = ["http://user:p'w\"d@proxy:3128", "http://$(Remove-Item C:\\k -Recurse)@proxy:3128",
         "http://proxy:3128/;Restart-Computer", "http://`whoami`@proxy:3128", "http://\u2019quote@proxy:1",
         "http://${env:Path}@proxy:1"]


@pytest.mark.parametrize("value", NASTY)
async def test_values_reach_the_node_verbatim_and_are_never_code(machine: WindowsMachine, value: str) -> None:
    desired = desired_state({"status": {"httpProxy": value, "noProxy": value}}, None)
    plan = plan_changes(desired, observed())
    assert value not in apply_script()  # the script is constant code; values are data
    result = await ps_with_data(machine, apply_script(), apply_data(plan))
    assert result.exit_code == 0, result.stderr
    assert machine.machine_environment()["HTTP_PROXY"] == value
    assert machine.machine_environment()["NO_PROXY"] == value
    assert machine.filesystem.exists("C:\\k")
    assert not machine.session_environment("Administrator").get("Path", "").startswith("$")


async def test_the_unquoted_variant_executes_injected_code(machine: WindowsMachine) -> None:
    value = "http://proxy:3128/$(Set-Content -Path C:\\k\\pwned.txt -Value owned)"
    plan = plan_changes(desired_state({"status": {"httpProxy": value}}, None), observed())
    await ps_with_data(machine, unquoted_apply_script(plan), apply_data(plan))
    assert machine.filesystem.exists("C:\\k\\pwned.txt")  # the broken variant is really broken
    assert machine.machine_environment()["HTTP_PROXY"] != value


async def test_observe_script_runs_on_a_node(machine: WindowsMachine) -> None:
    result = await ps(machine, encoded_command(observe_script()))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"hostname", "environment", "root", "imported", "bundle", "boot", "services"}
    assert data["services"]["kubelet"].endswith("Z") and data["environment"]["HTTP_PROXY"] is None


def test_only_checked_thumbprints_reach_the_data() -> None:
    with pytest.raises(ValueError, match="not a certificate thumbprint"):
        apply_data(ChangePlan(remove_certificates=["'; Remove-Item C:\\ -Recurse; '"]))
    assert apply_data(ChangePlan(remove_certificates=["AB" * 20]))["remove"] == ["AB" * 20]


async def test_removal_by_thumbprint_keeps_a_renewed_ca_and_by_subject_does_not(machine: WindowsMachine) -> None:
    old = trustme.CA(organization_name="Corp")
    renewed = renewed_ca(old)  # same subject, another certificate
    both = [cert(old), cert(renewed)]
    assert both[0].subject == both[1].subject and both[0].thumbprint != both[1].thumbprint
    install = plan_changes(desired_state({"status": {"httpsProxy": "http://p:1"}}, None), observed())
    install.import_certificates = both
    await ps_with_data(machine, apply_script(), apply_data(install))
    remove_old = ChangePlan(remove_certificates=[both[0].thumbprint])
    await ps_with_data(machine, apply_script(), apply_data(remove_old))
    assert set(machine.stores.machine_root.thumbprints()) >= {both[1].thumbprint}
    await ps_with_data(machine, apply_script(), apply_data(ChangePlan(import_certificates=[both[0]])))
    await ps_with_data(machine, by_subject_apply_script(), apply_data(remove_old))
    assert not {both[0].thumbprint, both[1].thumbprint} & set(machine.stores.machine_root.thumbprints())
