"""The applied revision both sides compute, and where a rollout stands (pure, from one snapshot)."""

from __future__ import annotations

from typing import Any

import trustme

from proxyfleet.core.contract import APPLIED, BUNDLE_KEY, MESSAGE, STATE_LABEL
from proxyfleet.core.rollout import Snapshot, applied_revision, assess, status_reflects_spec

PROXY_URL = "http://proxy.corp:3128"


def proxy(generation: int = 3, published: bool = True, no_proxy: str = ".corp") -> dict[str, Any]:
    spec = {"httpProxy": PROXY_URL, "httpsProxy": PROXY_URL, "noProxy": no_proxy, "trustedCA": {"name": "user-ca"}}
    status = {"httpProxy": PROXY_URL, "httpsProxy": PROXY_URL, "noProxy": f"{no_proxy},.cluster.local,10.0.0.0/16"}
    return {"metadata": {"generation": generation}, "spec": spec, "status": status if published else {}}


def bundle(pem: str, version: str = "41") -> dict[str, Any]:
    return {"metadata": {"resourceVersion": version}, "data": {BUNDLE_KEY: pem}}


def node(address: str, state: str, applied: str | None = None, message: str = "") -> dict[str, Any]:
    annotations = {MESSAGE: message} if message else {}
    if applied:
        annotations[APPLIED] = applied
    return {"metadata": {"name": f"win-{address}", "labels": {STATE_LABEL: state}, "annotations": annotations},
            "status": {"addresses": [{"type": "InternalIP", "address": address}]}}


def snapshot(nodes: list[dict[str, Any]], **changes: Any) -> Snapshot:
    pem = trustme.CA().cert_pem.bytes().decode()
    values: dict[str, Any] = dict(proxy=proxy(), trusted_ca=bundle(pem), managed_bundle=bundle(pem, "7"),
                                  user_bundle=bundle(pem, "3"), instances=["10.0.0.1", "10.0.0.2", "10.0.0.3"],
                                  nodes=nodes)
    values.update(changes)
    return Snapshot(**values)


def test_status_reflects_spec_when_urls_match_and_every_entry_is_published() -> None:
    assert status_reflects_spec(proxy()["spec"], proxy()["status"])
    assert not status_reflects_spec(proxy(no_proxy=".corp,.new")["spec"], proxy()["status"])
    assert not status_reflects_spec(proxy()["spec"], {})
    assert status_reflects_spec({}, {})  # no proxy at all


def test_the_revision_names_generation_and_bundle_version_once_published() -> None:
    assert applied_revision(proxy(), bundle("x")) == "3/41"
    assert applied_revision(proxy(published=False), bundle("x")) is None
    assert applied_revision({"metadata": {"generation": 5}, "spec": {}, "status": {}}, bundle("x")) == "5/none"
    assert applied_revision(None, None) is None


def test_assess_sorts_instances_into_done_pending_and_failed() -> None:
    found = assess(snapshot([node("10.0.0.1", "configured", "3/41"),
                             node("10.0.0.2", "configured", "2/40"),
                             node("10.0.0.3", "failed", message="cannot reach node")]))
    assert found.revision == "3/41"
    assert found.done == ["win-10.0.0.1"]
    assert found.pending == ["win-10.0.0.2 (configured)"]  # an old claim is not the current one
    assert found.failed == ["win-10.0.0.3: cannot reach node"]
    assert not found.complete


def test_an_instance_without_a_node_is_pending() -> None:
    found = assess(snapshot([node("10.0.0.1", "configured", "3/41")], instances=["10.0.0.1", "10.0.0.9"]))
    assert found.pending == ["10.0.0.9 (no Node yet)"]


def test_no_revision_until_the_bundle_is_merged_and_injected() -> None:
    other = trustme.CA().cert_pem.bytes().decode()
    found = assess(snapshot([], trusted_ca=bundle(other)))
    assert found.revision is None and "merged and injected" in found.waiting_for
    corrupt = assess(snapshot([], user_bundle=bundle("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")))
    assert corrupt.revision is None


def test_every_instance_done_completes_the_rollout() -> None:
    done = [node(a, "configured", "3/41") for a in ("10.0.0.1", "10.0.0.2", "10.0.0.3")]
    assert assess(snapshot(done)).complete
    assert assess(snapshot(done, proxy=None)).waiting_for == "the cluster has no Proxy object"
