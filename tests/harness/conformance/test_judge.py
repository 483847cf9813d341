"""The judge's ClaimWatch: a node the reconciler reports done while the judge sees it off its
target ends the step only once that has held, and never for a node that is down or unreachable.
(The judge's step orchestration runs in every scenario and self-test.)"""

from pathlib import Path

import asyncssh
import pytest

from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.judge import (
    NODE_CHANGE_SETTLE,
    PENDING_POLL,
    ClaimWatch,
    Conformance,
    LabRequired,
    wake_spacing,
)


def test_a_claim_refuted_long_enough_is_definitive() -> None:
    watch = ClaimWatch(hold=0.0)
    refuted = watch.update({"a": "registry-env", "b": "certificates"}, claimed={"a"}, up={"a", "b"})
    assert refuted == {"a"}  # b is still off, but nobody says it is done
    assert "without waiting for the deadline" in watch.describe("a", "registry-env")
    assert watch.describe("b", "certificates") == "certificates"


def test_a_fresh_claim_is_not_yet_definitive() -> None:
    watch = ClaimWatch(hold=3600.0)
    assert watch.update({"a": "registry-env"}, claimed={"a"}, up={"a"}) == set()
    assert "a" in watch.since


def test_down_or_unreachable_nodes_refute_nothing() -> None:
    watch = ClaimWatch(hold=0.0)
    assert watch.update({"a": "registry-env"}, claimed={"a"}, up=set()) == set()  # mid-reboot
    assert watch.update({"a": "unreachable (connection refused)"}, claimed={"a"}, up={"a"}) == set()


def test_a_claim_that_stops_being_refuted_starts_over() -> None:
    watch = ClaimWatch(hold=3600.0)
    watch.update({"a": "registry-env"}, claimed={"a"}, up={"a"})
    watch.update({}, claimed={"a"}, up={"a"})  # converged at the next look
    assert watch.since == {}


def test_wake_spacing_grows_with_the_fleet_and_never_passes_the_poll() -> None:
    assert wake_spacing(1) == NODE_CHANGE_SETTLE  # a small lab looks right after a node finishes
    assert wake_spacing(10) == NODE_CHANGE_SETTLE
    assert NODE_CHANGE_SETTLE < wake_spacing(50) < wake_spacing(100) < PENDING_POLL
    assert wake_spacing(1000) == PENDING_POLL  # a wake never delays a look past the poll


def test_a_judge_needs_a_lab_or_a_cluster_and_a_cluster_has_no_lab(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a lab or a cluster"):
        Conformance(None)
    key = tmp_path / "id"
    key.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:1}}]\n"
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    judge = Conformance(None, cluster=ClusterTarget(kubeconfig, key, "http://p:3128"))
    assert not judge.on_lab and judge.addresses == []
    with pytest.raises(LabRequired, match="needs the embedded lab"):
        _ = judge.lab
    assert judge._activity("10.0.0.5") != judge._activity("10.0.0.5")  # a real host: every look is new
