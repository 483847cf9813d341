"""The reconciler's pure parts: desired state from the cluster, and the change plan against a node."""

from __future__ import annotations

import pytest
import trustme

from proxyfleet.harness.reconciler.desired import InvalidClusterInput, desired_state, plan_changes
from tests.harness.reconciler.plans import PROXY, bundle, cert, observed, variant


def test_desired_state_follows_the_proxy_status() -> None:
    ca = trustme.CA()
    desired = desired_state(PROXY, bundle(ca))
    assert desired.environment == {"HTTP_PROXY": "http://p:3128", "HTTPS_PROXY": "http://p:3128",
                                   "NO_PROXY": ".svc,10.0.0.0/8"}
    assert desired.thumbprints == {cert(ca).thumbprint}
    nothing = desired_state({"spec": {"httpProxy": "http://p:1"}}, bundle(ca))  # spec alone is not applied
    assert nothing.environment == dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"))
    assert nothing.certificates == ()  # no proxy: no certificates of ours either


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


def test_cleanup_only_when_nothing_of_ours_is_left() -> None:
    ca = trustme.CA()
    imported = observed(env={"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", "NO_PROXY": None},
                        root={cert(ca).thumbprint}, imported=cert(ca).thumbprint + "\n")
    assert plan_changes(desired_state(None, None), imported).cleanup  # proxy gone, own import removed
    assert not plan_changes(desired_state(PROXY, bundle(ca)), observed()).cleanup  # a bundle to keep
    assert not variant("leaves-files").plan(desired_state(None, None), imported).cleanup
