"""The reconciler's pure parts: desired state, change plans, and the PowerShell it generates."""

from __future__ import annotations

import pytest
import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.nodessh import encoded_command
from proxyfleet.harness.reconciler.desired import InvalidClusterInput, ObservedState, desired_state, plan_changes
from proxyfleet.harness.reconciler.scripts import apply_data, apply_script, observe_script, unquoted_apply_script
from proxyfleet.harness.reconciler.variants import VARIANTS, variant
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps, ps_with_data

PROXY = {"status": {"httpProxy": "http://p:3128", "httpsProxy": "http://p:3128", "noProxy": ".svc,10.0.0.0/8"}}


def bundle(*cas: trustme.CA) -> dict[str, dict[str, str]]:
    return {"data": {"ca-bundle.crt": "".join(ca.cert_pem.bytes().decode() for ca in cas)}}


def cert(ca: trustme.CA) -> Certificate:
    return Certificate.from_pem(ca.cert_pem.bytes())


def observed(env: dict[str, str | None] | None = None, root: set[str] | None = None,
             imported: str = "") -> ObservedState:
    return ObservedState("win-0001", env or dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")),
                         frozenset(root or set()), imported, None, "boot-1", {})


def test_desired_state_follows_the_proxy_status() -> None:
    ca = trustme.CA()
    desired = desired_state(PROXY, bundle(ca))
    assert desired.environment == {"HTTP_PROXY": "http://p:3128", "HTTPS_PROXY": "http://p:3128",
                                   "NO_PROXY": ".svc,10.0.0.0/8"}
    assert desired.thumbprints == {cert(ca).thumbprint}
    nothing = desired_state({"spec": {"httpProxy": "http://p:1"}}, bundle(ca))  # spec alone is not applied
    assert nothing.environment == dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"))
    assert nothing.certificates == ()  # no proxy: no certificates of ours either


def test_semicolon_variant_rewrites_no_proxy() -> None:
    assert desired_state(PROXY, bundle(trustme.CA()), variant("semicolon-noproxy")).environment["NO_PROXY"] == \
        ".svc;10.0.0.0/8"


@pytest.mark.parametrize("value", ["http://p:3128\nInvoke-Bad", "http://p:3128\r", "a\x00b"])
def test_control_characters_are_refused(value: str) -> None:
    with pytest.raises(InvalidClusterInput) as caught:
        desired_state({"status": {"httpProxy": value}}, None)
    assert caught.value.reason == "UnsafeValue"


@pytest.mark.parametrize("text", ["not pem", "-----BEGIN CERTIFICATE-----\nnope!\n-----END CERTIFICATE-----\n"])
def test_garbage_bundles_are_refused(text: str) -> None:
    with pytest.raises(InvalidClusterInput) as caught:
        desired_state(PROXY, {"data": {"ca-bundle.crt": text}})
    assert caught.value.reason == "InvalidTrustBundle"


def test_first_configuration_plan() -> None:
    corp, builtin = trustme.CA(), trustme.CA()
    desired = desired_state(PROXY, bundle(corp, builtin))
    plan = plan_changes(desired, observed(root={cert(builtin).thumbprint}), {c.thumbprint: c for c in desired.certificates})
    assert plan.set_environment == desired.environment
    assert [c.thumbprint for c in plan.import_certificates] == [cert(corp).thumbprint]  # built-in already there
    assert [c.thumbprint for c in plan.record_after] == [cert(corp).thumbprint]  # only what it imported
    assert plan.upload_bundle and plan.changes_node


def test_rotation_removes_only_own_imports_and_nothing_changes_twice() -> None:
    old, new, builtin = trustme.CA(), trustme.CA(), trustme.CA()
    desired = desired_state(PROXY, bundle(new, builtin))
    state = observed(env=dict(desired.environment),
                     root={cert(old).thumbprint, cert(builtin).thumbprint},
                     imported=old.cert_pem.bytes().decode())
    known = {c.thumbprint: c for c in (*desired.certificates, cert(old))}
    plan = plan_changes(desired, state, known)
    assert plan.remove_certificates == [cert(old).thumbprint]
    assert [c.thumbprint for c in plan.import_certificates] == [cert(new).thumbprint]
    assert not plan.set_environment and not plan.delete_environment
    settled = observed(env=dict(desired.environment), root={cert(new).thumbprint, cert(builtin).thumbprint},
                       imported=new.cert_pem.bytes().decode())
    again = plan_changes(desired, settled, known)
    assert not again.changes_node


def test_removal_plan_and_broken_variants() -> None:
    ca = trustme.CA()
    nothing = desired_state(None, None)
    state = observed(env={"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", "NO_PROXY": None},
                     root={cert(ca).thumbprint}, imported=ca.cert_pem.bytes().decode())
    known = {cert(ca).thumbprint: cert(ca)}
    plan = plan_changes(nothing, state, known)
    assert sorted(plan.delete_environment) == ["HTTPS_PROXY", "HTTP_PROXY"]
    assert plan.remove_certificates == [cert(ca).thumbprint] and plan.record_after == []
    assert plan_changes(nothing, state, known, variant("no-env-removal")).delete_environment == []
    assert plan_changes(nothing, state, known, variant("no-cert-removal")).remove_certificates == []
    assert plan_changes(desired_state(PROXY, bundle(ca)), observed(), known,
                        variant("no-cert-import")).import_certificates == []


def test_every_variant_is_named() -> None:
    assert set(VARIANTS) == {"correct", "semicolon-noproxy", "no-reboot", "early-reachability", "no-cert-import",
                             "no-cert-removal", "no-env-removal", "unquoted-values", "records-whole-bundle",
                             "no-service-wait", "reboot-without-exit-status"}
    with pytest.raises(ValueError, match="unknown reconciler variant"):
        variant("nope")


NASTY = ["http://user:p'w\"d@proxy:3128", "http://$(Remove-Item C:\\k -Recurse)@proxy:3128",
         "http://proxy:3128/;Restart-Computer", "http://`whoami`@proxy:3128", "http://\u2019quote@proxy:1",
         "http://${env:Path}@proxy:1"]


@pytest.mark.parametrize("value", NASTY)
async def test_values_reach_the_node_verbatim_and_are_never_code(machine: WindowsMachine, value: str) -> None:
    desired = desired_state({"status": {"httpProxy": value, "noProxy": value}}, None)
    plan = plan_changes(desired, observed(), {})
    assert value not in apply_script()  # the script is constant code; values are data
    result = await ps_with_data(machine, apply_script(), apply_data(plan))
    assert result.exit_code == 0, result.stderr
    assert machine.machine_environment()["HTTP_PROXY"] == value
    assert machine.machine_environment()["NO_PROXY"] == value
    assert machine.filesystem.exists("C:\\k")
    assert not machine.session_environment("Administrator").get("Path", "").startswith("$")


async def test_the_unquoted_variant_executes_injected_code(machine: WindowsMachine) -> None:
    value = "http://proxy:3128/$(Set-Content -Path C:\\k\\pwned.txt -Value owned)"
    plan = plan_changes(desired_state({"status": {"httpProxy": value}}, None), observed(), {})
    await ps_with_data(machine, unquoted_apply_script(plan), apply_data(plan))
    assert machine.filesystem.exists("C:\\k\\pwned.txt")  # the broken variant is really broken
    assert machine.machine_environment()["HTTP_PROXY"] != value


async def test_observe_script_runs_on_a_node(machine: WindowsMachine) -> None:
    import json

    result = await ps(machine, encoded_command(observe_script()))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"hostname", "environment", "root", "imported", "bundle", "boot", "services"}
    assert data["services"]["kubelet"].endswith("Z") and data["environment"]["HTTP_PROXY"] is None
