"""--wait-restored: the cluster is back only when every Node's cordon is as saved, every instance's
Node is Ready, and the instances hold the restored settings — by the revision a reconciler
claims, or, for one that claims none (WMCO), by no Node owing a reboot, which the result says it
could not tell from a rollout not begun."""

from __future__ import annotations

import asyncio
from typing import Any

import click
import pytest
from kubernetes import client

from proxyfleet.core.contract import APPLIED, STATE_LABEL
from proxyfleet.core.rollout import Snapshot
from proxyfleet.harness.cli.clusterrun import wait_seconds
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.restorewait import REBOOT_REQUIRED, progress, wait_restored
from proxyfleet.simulators.controlplane.cluster import ControlPlane

PROXY = {"metadata": {"generation": 7}, "spec": {}, "status": {}}  # no proxy: revision 7/none


def _node(name: str, address: str, *, ready: bool = True, cordoned: bool = False,
          annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
            "spec": {"unschedulable": cordoned},
            "status": {"addresses": [{"type": "InternalIP", "address": address}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _snapshot(*nodes: dict[str, Any]) -> Snapshot:
    return Snapshot(PROXY, None, None, None, [n["status"]["addresses"][0]["address"] for n in nodes], list(nodes))


def _claiming(name: str, address: str, revision: str, **more: Any) -> dict[str, Any]:
    return _node(name, address, annotations={APPLIED: revision}, labels={STATE_LABEL: "configured"}, **more)


def test_a_claiming_reconciler_is_back_when_every_instance_holds_the_restored_revision() -> None:
    back = progress(_snapshot(_claiming("win-1", "10.0.0.1", "7/none"), _claiming("win-2", "10.0.0.2", "7/none")),
                    {"win-1": False, "win-2": True, "linux-1": False})
    assert not back.done and back.still == ["Node win-2 uncordoned (it was cordoned)"]  # an admin's cordon
    back = progress(_snapshot(_claiming("win-1", "10.0.0.1", "7/none"), _claiming("win-2", "10.0.0.2", "7/none",
                                                                                  cordoned=True)),
                    {"win-1": False, "win-2": True})
    assert back.done and back.claims and "every instance holds the restored revision" in back.note()
    rolling = progress(_snapshot(_claiming("win-1", "10.0.0.1", "7/none"), _claiming("win-2", "10.0.0.2", "6/42",
                                                                                     ready=False)), {})
    assert rolling.still == ["Node win-2 not Ready", "win-2 (configured) (not yet at revision 7/none)"]


def test_a_reconciler_that_claims_nothing_is_judged_by_the_reboots_it_owes_and_says_so() -> None:
    owes = progress(_snapshot(_node("win-1", "10.0.0.1", annotations={REBOOT_REQUIRED: ""}),
                              _node("win-2", "10.0.0.2")), {"win-1": False, "win-2": False})
    assert not owes.claims and owes.still == [f"Node win-1 owes a reboot ({REBOOT_REQUIRED})"]
    back = progress(_snapshot(_node("win-1", "10.0.0.1"), _node("win-2", "10.0.0.2")), {"win-1": False})
    assert back.done and "the revision itself was not observable" in back.note()
    missing = progress(Snapshot(PROXY, None, None, None, ["10.0.0.9"], []), {})
    assert missing.still == ["instance 10.0.0.9: no Node"]


def test_the_wait_is_on_in_ci_and_off_elsewhere_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert wait_seconds(None) is None and wait_seconds("5m") == 300 and wait_seconds("0") is None
    monkeypatch.setenv("CI", "true")
    assert wait_seconds(None) == 900 and wait_seconds("0") is None
    assert wait_seconds("True") == 900 and wait_seconds("false") is None  # a run file's yes/no
    for endless in ("nan", "inf", "-5"):
        with pytest.raises(click.BadParameter, match="expected a duration such as 15m"):
            wait_seconds(endless)


async def test_waiting_ends_when_the_cordon_is_back_or_says_what_is_not(plane: ControlPlane,
                                                                        api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await asyncio.to_thread(core.create_node, client.V1Node(metadata=client.V1ObjectMeta(name="win-0001")))
    await admin.cordon(api, "win-0001", True)  # the run's cordon, still there
    shown: list[str] = []
    never = await wait_restored(api, {"win-0001": False}, within=0.5, poll=0.1, show=shown.append)
    assert not never.done and never.still == ["Node win-0001 cordoned (it was schedulable)"]
    assert shown == ["waiting for the cluster to be back: Node win-0001 cordoned (it was schedulable)"]

    looked = asyncio.Event()

    def seen(line: str) -> None:
        looked.set()  # the second wait has looked once, and found the cordon

    async def uncordon_once_looked() -> None:
        await looked.wait()
        await admin.cordon(api, "win-0001", False)

    task = asyncio.create_task(uncordon_once_looked())
    back = await wait_restored(api, {"win-0001": False}, within=600, poll=0.1, show=seen)
    await task
    assert back.done
