"""``proxyfleet rollout status``: the revision arithmetic (pure), and against a running lab — it
does not return before every node holds the change (checked over SSH right after), for a Proxy
change and for a trusted-CA-only change, and it fails on a node stuck in ``failed``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trustme
from kubernetes import client

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.contract import APPLIED, MESSAGE, OPERATOR_NAMESPACE, STATE_LABEL
from proxyfleet.core.rollout import Snapshot, applied_revision, assess
from proxyfleet.harness.cli.rollout import parse_duration
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.harness.lab import DEFAULT_NO_PROXY, Lab, LabSettings, admin
from proxyfleet.harness.reconciler.hostkeys import PINS_CONFIGMAP

# --- pure ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("12", 12)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "1x"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def proxy(generation: int, spec_url: str, status_url: str, trusted: str = "corp-ca") -> dict[str, Any]:
    return {"metadata": {"generation": generation},
            "spec": {"httpProxy": spec_url, "httpsProxy": spec_url, "trustedCA": {"name": trusted}},
            "status": {"httpProxy": status_url, "httpsProxy": status_url, "noProxy": ".svc"} if status_url else {}}


def bundle(rv: str, *cas: trustme.CA) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv},
            "data": {"ca-bundle.crt": "".join(ca.cert_pem.bytes().decode() for ca in cas)}}


def node(name: str, address: str, state: str, applied: str | None, message: str = "") -> dict[str, Any]:
    annotations = {MESSAGE: message, **({APPLIED: applied} if applied else {})}
    return {"metadata": {"name": name, "labels": {STATE_LABEL: state}, "annotations": annotations},
            "status": {"addresses": [{"type": "InternalIP", "address": address}]}}


def test_the_revision_names_a_generation_only_once_status_reflects_it() -> None:
    ca = trustme.CA()
    assert applied_revision(proxy(3, "http://p:1", "http://p:1"), bundle("77", ca)) == "3/77"
    assert applied_revision(proxy(4, "http://p:2", "http://p:1"), bundle("77", ca)) is None
    assert applied_revision(proxy(5, "", ""), bundle("77", ca)) == "5/none"  # no proxy: no bundle on nodes


def test_assess_waits_for_publication_then_counts_nodes() -> None:
    corp, other = trustme.CA(), trustme.CA()
    published = Snapshot(proxy(3, "http://p:1", "http://p:1"), bundle("77", corp), bundle("70", corp),
                         bundle("60", corp), ["127.10.0.1", "127.10.0.2", "127.10.0.3"],
                         [node("win-1", "127.10.0.1", "configured", "3/77"),
                          node("win-2", "127.10.0.2", "configured", "2/70"),  # from before the change
                          node("win-3", "127.10.0.3", "rebooting", "2/70", "restarting")])
    found = assess(published)
    assert found.revision == "3/77" and found.done == ["win-1"] and not found.complete
    assert found.pending == ["win-2 (configured)", "win-3 (rebooting: restarting)"]
    unmerged = Snapshot(**{**published.__dict__, "user_bundle": bundle("61", corp, other)})
    assert assess(unmerged).revision is None and "merged" in assess(unmerged).waiting_for
    early = Snapshot(**{**published.__dict__, "proxy": proxy(4, "http://p:2", "http://p:1")})
    assert assess(early).revision is None and "status" in assess(early).waiting_for
    stuck = Snapshot(**{**published.__dict__,
                        "nodes": [node("win-1", "127.10.0.1", "failed", "2/70", "HostKeyMismatch")]})
    assert assess(stuck).failed == ["win-1: HostKeyMismatch"]
    done = Snapshot(**{**published.__dict__, "nodes": [node(f"win-{i}", f"127.10.0.{i}", "configured", "3/77")
                                                       for i in (1, 2, 3)]})
    assert assess(done).complete


# --- against a running lab -------------------------------------------------------------------------


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=3, reconciler="correct", reboot_duration=0.3, shutdown_delay=0.15)) as running:
        await admin.set_instances(running.api(), [(n.address, n.username) for n in running.fleet.nodes])
        yield running


async def test_the_labs_reconciler_resyncs_at_the_period_the_lab_works_out(lab: Lab) -> None:
    assert lab.reconciler is not None
    assert lab.reconciler.settings.resync_period == lab.settings.resync() == 10.0


async def rollout_status(lab: Lab, timeout: str = "120s") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxyfleet.harness", "rollout", "status", "--kubeconfig", str(lab.kubeconfig),
        "--timeout", timeout, "--poll-seconds", "0.2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def observe_all(lab: Lab) -> list[Any]:
    probe = NodeProbe(lab.fleet.client_key, lab.fleet.port)
    try:
        return [await probe.observe(n.address) for n in lab.fleet.nodes]
    finally:
        await probe.close()


@pytest.mark.slow
async def test_rollout_status_returns_only_when_every_node_has_the_change(lab: Lab) -> None:
    api = lab.api()
    code, out, err = await rollout_status(lab)  # nothing to roll out: every node applied "1/none"
    assert code == 0, out + err
    await admin.set_trusted_ca(api, lab.mitm_ca_pem.decode())
    await admin.set_proxy(api, http_proxy=lab.proxy_url, https_proxy=lab.proxy_url, no_proxy=DEFAULT_NO_PROXY,
                          trusted_ca="corp-ca")
    code, out, err = await rollout_status(lab)  # started right after the change
    assert code == 0, out + err
    assert "rollout complete: 3 instance(s)" in out
    for state in await observe_all(lab):  # over SSH, right after it returned
        assert state.environment["HTTPS_PROXY"] == lab.proxy_url

    extra = trustme.CA()  # a change of the trusted CA alone
    await admin.set_trusted_ca(api, lab.mitm_ca_pem.decode() + extra.cert_pem.bytes().decode())
    code, out, err = await rollout_status(lab)
    assert code == 0, out + err
    thumbprint = Certificate.from_pem(extra.cert_pem.bytes()).thumbprint
    for state in await observe_all(lab):
        assert thumbprint in state.root


@pytest.mark.slow
async def test_rollout_status_fails_on_a_failed_instance(lab: Lab) -> None:
    api = lab.api()
    code, out, err = await rollout_status(lab)
    assert code == 0, out + err  # first contact pinned every host key
    core = client.CoreV1Api(api)
    pins = await asyncio.to_thread(core.read_namespaced_config_map, PINS_CONFIGMAP, OPERATOR_NAMESPACE)
    first, _, third = (n.address for n in lab.fleet.nodes)
    # the third host's pin now names another host's key: the reconciler must refuse it
    await asyncio.to_thread(core.patch_namespaced_config_map, PINS_CONFIGMAP, OPERATOR_NAMESPACE,
                            {"data": {third: pins.data[first]}})
    await admin.set_proxy(api, http_proxy=lab.proxy_url, https_proxy=lab.proxy_url, no_proxy=DEFAULT_NO_PROXY)
    code, out, err = await rollout_status(lab)
    assert code == 1
    assert "error: instance win-0003" in err and "host key" in err.lower()
