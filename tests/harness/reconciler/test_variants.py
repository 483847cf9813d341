"""The broken reconciler variants: each is the reference class with one piece overridden, and each
piece is really broken (the conformance self-test proves each is caught)."""

from __future__ import annotations

import pytest
import trustme

from proxyfleet.harness.reconciler.controller import Reconciler
from proxyfleet.harness.reconciler.desired import desired_state, plan_changes
from proxyfleet.harness.reconciler.variants import VARIANTS, reconciler_class
from tests.harness.reconciler.plans import PROXY, bundle, cert, observed, variant


def test_semicolon_variant_rewrites_no_proxy() -> None:
    assert variant("semicolon-noproxy").desired(PROXY, bundle(trustme.CA())).environment["NO_PROXY"] == \
        ".svc;10.0.0.0/8"
    assert variant("correct").desired(PROXY, bundle(trustme.CA())).environment["NO_PROXY"] == ".svc,10.0.0.0/8"


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
                             "no-service-wait", "fixed-service-wait", "reboot-without-exit-status", "leaks-credentials",
                             "annotates-credentials", "reboots-while-terminating", "frees-stuck-slot",
                             "leaves-files", "ignores-max-unavailable", "uncordons-admin-cordon",
                             "trusts-import-record", "http-from-https", "normalises-noproxy", "removes-by-subject",
                             "no-trusted-ca-restore", "never-retries-unreachable", "reboots-again-after-restart",
                             "applies-stale-settings", "ignores-host-keys", "no-warning-events", "skips-drain",
                             "deletes-pods", "linux-live-apply", "linux-upper-case-only", "linux-no-daemon-reload",
                             "linux-no-update-ca-trust", "linux-unquoted-environment", "linux-restarts-runtime-only",
                             "linux-leaves-drop-in", "linux-set-environment"}
    with pytest.raises(ValueError, match="unknown reconciler variant"):
        reconciler_class("nope")
