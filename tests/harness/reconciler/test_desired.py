"""The reconciler's pure parts: desired state, change plans, and the PowerShell it generates."""

from __future__ import annotations

import pytest
import trustme
from kubernetes import client

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.nodessh import encoded_command
from proxyfleet.harness.reconciler.controller import Reconciler
from proxyfleet.harness.reconciler.desired import InvalidClusterInput, ObservedState, desired_state, plan_changes
from proxyfleet.harness.reconciler.scripts import apply_data, apply_script, observe_script, unquoted_apply_script
from proxyfleet.harness.reconciler.variants import VARIANTS, make_reconciler, reconciler_class
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps, ps_with_data

PROXY = {"status": {"httpProxy": "http://p:3128", "httpsProxy": "http://p:3128", "noProxy": ".svc,10.0.0.0/8"}}


def bundle(*cas: trustme.CA) -> dict[str, dict[str, str]]:
    return {"data": {"ca-bundle.crt": "".join(ca.cert_pem.bytes().decode() for ca in cas)}}


def cert(ca: trustme.CA) -> Certificate:
    return Certificate.from_pem(ca.cert_pem.bytes())


def variant(name: str) -> Reconciler:
    """A broken variant, for its pure hooks (nothing is started; the client never connects)."""
    return make_reconciler(client.ApiClient(), None, name)


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
    assert variant("semicolon-noproxy").desired(PROXY, bundle(trustme.CA())).environment["NO_PROXY"] == \
        ".svc;10.0.0.0/8"
    assert variant("correct").desired(PROXY, bundle(trustme.CA())).environment["NO_PROXY"] == ".svc,10.0.0.0/8"


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
    plan = plan_changes(desired, observed(root={cert(builtin).thumbprint}))
    assert plan.set_environment == desired.environment
    assert [c.thumbprint for c in plan.import_certificates] == [cert(corp).thumbprint]  # built-in already there
    assert plan.record_after == [cert(corp).thumbprint]  # only what it imported
    assert plan.upload_bundle and plan.changes_node


def test_rotation_removes_only_own_imports_and_nothing_changes_twice() -> None:
    old, new, builtin = trustme.CA(), trustme.CA(), trustme.CA()
    desired = desired_state(PROXY, bundle(new, builtin))
    state = observed(env=dict(desired.environment),
                     root={cert(old).thumbprint, cert(builtin).thumbprint},
                     imported=cert(old).thumbprint + "\n")
    plan = plan_changes(desired, state)
    assert plan.remove_certificates == [cert(old).thumbprint]
    assert [c.thumbprint for c in plan.import_certificates] == [cert(new).thumbprint]
    assert not plan.set_environment and not plan.delete_environment
    settled = observed(env=dict(desired.environment), root={cert(new).thumbprint, cert(builtin).thumbprint},
                       imported=cert(new).thumbprint + "\n")
    again = plan_changes(desired, settled)
    assert not again.changes_node


def test_removal_plan_and_broken_variants() -> None:
    ca = trustme.CA()
    nothing = desired_state(None, None)
    state = observed(env={"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", "NO_PROXY": None},
                     root={cert(ca).thumbprint}, imported=cert(ca).thumbprint + "\n")
    plan = plan_changes(nothing, state)
    assert sorted(plan.delete_environment) == ["HTTPS_PROXY", "HTTP_PROXY"]
    assert plan.remove_certificates == [cert(ca).thumbprint] and plan.record_after == []
    assert variant("correct").plan(nothing, state).delete_environment == plan.delete_environment
    assert variant("no-env-removal").plan(nothing, state).delete_environment == []
    kept = variant("no-cert-removal").plan(nothing, state)
    assert kept.remove_certificates == [] and kept.record_after == [cert(ca).thumbprint]
    assert variant("no-cert-import").plan(desired_state(PROXY, bundle(ca)), observed()).import_certificates == []


def test_records_whole_bundle_claims_built_in_roots() -> None:
    corp, builtin = trustme.CA(), trustme.CA()
    desired = desired_state(PROXY, bundle(corp, builtin))
    first = observed(root={cert(builtin).thumbprint})
    assert variant("correct").plan(desired, first).record_after == [cert(corp).thumbprint]
    claimed = variant("records-whole-bundle").plan(desired, first)
    assert claimed.record_after == sorted({cert(corp).thumbprint, cert(builtin).thumbprint})
    # and so, when the proxy goes, the built-in root goes with it
    gone = observed(env=dict(desired.environment), root={cert(corp).thumbprint, cert(builtin).thumbprint},
                    imported="".join(f"{t}\n" for t in claimed.record_after))
    assert cert(builtin).thumbprint in plan_changes(desired_state(None, None), gone).remove_certificates


def test_the_reference_verifier_is_not_weakened_by_any_variant() -> None:
    wanted: dict[str, str | None] = {"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}
    left = {"HTTP_PROXY": "http://p:1"}
    assert variant("correct").environment_mismatches(wanted, left) == {"HTTP_PROXY": None}
    assert variant("no-env-removal").environment_mismatches(wanted, left) == {}
    assert variant("correct").stale_services({"kubelet": "2026-01-01"}, "2026-02-01")
    assert not variant("correct").reboot_again(1, confirmed=False, failure=None)
    assert variant("reboot-without-exit-status").reboot_again(1, confirmed=False, failure=None)
    for name in VARIANTS:  # each variant changes the reference class only by overriding
        assert issubclass(reconciler_class(name), Reconciler)


def test_every_variant_is_named() -> None:
    assert set(VARIANTS) == {"correct", "semicolon-noproxy", "no-reboot", "early-reachability", "no-cert-import",
                             "no-cert-removal", "no-env-removal", "unquoted-values", "records-whole-bundle",
                             "no-service-wait", "reboot-without-exit-status", "leaks-credentials",
                             "leaves-files", "ignores-max-unavailable", "uncordons-admin-cordon",
                             "trusts-import-record", "http-from-https", "normalises-noproxy", "removes-by-subject",
                             "no-trusted-ca-restore", "never-retries-unreachable", "reboots-again-after-restart",
                             "applies-stale-settings", "ignores-host-keys", "no-warning-events", "skips-drain",
                             "deletes-pods"}
    with pytest.raises(ValueError, match="unknown reconciler variant"):
        reconciler_class("nope")


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
    import json

    result = await ps(machine, encoded_command(observe_script()))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"hostname", "environment", "root", "imported", "bundle", "boot", "services"}
    assert data["services"]["kubelet"].endswith("Z") and data["environment"]["HTTP_PROXY"] is None


def test_cleanup_only_when_nothing_of_ours_is_left() -> None:
    ca = trustme.CA()
    imported = observed(env={"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", "NO_PROXY": None},
                        root={cert(ca).thumbprint}, imported=cert(ca).thumbprint + "\n")
    assert plan_changes(desired_state(None, None), imported).cleanup  # proxy gone, own import removed
    assert not plan_changes(desired_state(PROXY, bundle(ca)), observed()).cleanup  # a bundle to keep
    assert not variant("leaves-files").plan(desired_state(None, None), imported).cleanup
