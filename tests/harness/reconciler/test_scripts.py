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
    verify_script,
    wait_for_services_script,
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


@pytest.mark.parametrize(("within", "timeout"), [(0.0, "0.00:00:00.0"), (30.0, "0.00:00:05.0"),
                                                 (599.9, "0.00:01:39.9"), (6 * 90061.0, "1.01:01:01.0")])
def test_the_service_wait_shares_the_timeout_out(within: float, timeout: str) -> None:
    script = wait_for_services_script(within)
    assert f"WaitForStatus('Running', '{timeout}')" in script  # each of six services: never past within


async def test_verification_waits_for_stopped_services_within_its_time(machine: WindowsMachine) -> None:
    await ps(machine, "Stop-Service kube-proxy -Force")
    result = await ps(machine, verify_script(0.6))  # 0.1 s for each service, then the report
    assert result.exit_code == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert services["kube-proxy"] is None and services["kubelet"], services  # it did not come: reported, not raised
