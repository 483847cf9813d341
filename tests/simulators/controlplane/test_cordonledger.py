"""The lab's record of cordons at the store's commit: only changes of ``spec.unschedulable``, on
the clock the outages use, whatever a watch's consumer is doing."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proxyfleet.simulators.controlplane.cordonledger import CordonLedger
from proxyfleet.simulators.controlplane.resources import CONFIGMAPS, NODES
from proxyfleet.simulators.controlplane.store import Store

T0 = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def ticking() -> Any:
    seconds = iter(range(100))
    return lambda: T0 + dt.timedelta(seconds=next(seconds))


def node(name: str, unschedulable: bool | None = None, label: str = "a") -> dict[str, Any]:
    spec = {} if unschedulable is None else {"unschedulable": unschedulable}
    return {"metadata": {"name": name, "labels": {"l": label}}, "spec": spec}


def test_each_cordon_change_is_recorded_as_committed_and_nothing_else() -> None:
    store = Store()
    ledger = CordonLedger(ticking())
    store.observers.append(ledger.observe)
    store.create(NODES, node("a"))  # created schedulable: no change
    store.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}, "data": {}})
    current = store.get(NODES, "", "a")
    current = store.update(NODES, "", "a", {**current, "spec": {"unschedulable": True}})
    current = store.update(NODES, "", "a", {**current, "metadata": {**current["metadata"], "labels": {"l": "b"}}})
    current = store.update(NODES, "", "a", {**current, "spec": {}})  # uncordoned: the field dropped
    assert ledger.changes("a") == ((T0, True), (T0 + dt.timedelta(seconds=1), False))
    store.create(NODES, node("b", unschedulable=True))  # created cordoned
    store.delete(NODES, "", "b")  # a deleted Node is no longer cordoned
    assert [cordoned for _, cordoned in ledger.changes("b")] == [True, False]
    assert ledger.changes("unknown") == ()

