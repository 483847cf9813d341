"""Judging "cordoned for the whole reboot" from a cordon timeline, and which Node changes wake the
judge (pure); the timeline's watch cache of Nodes by address (against the lab's API server)."""

import asyncio
import datetime as dt

from kubernetes import client

from proxyfleet.core.contract import APPLIED
from proxyfleet.harness.conformance.checks import peak_unavailable
from proxyfleet.harness.conformance.cordons import CordonChange, CordonTimeline, cordoned_spans
from tests.support import HANG, wait_until

T0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
NODE = "127.10.0.1"


def timeline(*changes: tuple[float, bool]) -> CordonTimeline:
    recorded = CordonTimeline(api=None)  # type: ignore[arg-type]
    recorded.changes = [CordonChange(T0 + dt.timedelta(seconds=s), NODE, c) for s, c in changes]
    return recorded


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_cordoned_before_going_down_and_uncordoned_after_coming_back() -> None:
    ok, text = timeline((0.0, False), (1.0, True), (5.0, False)).cordoned_through(NODE, at(2), at(4))
    assert ok, text


def test_uncordoned_while_down_is_caught() -> None:
    ok, text = timeline((0.0, False), (1.0, True), (2.5, False)).cordoned_through(NODE, at(2), at(4))
    assert not ok and "uncordoned 1.50s before it came back up" in text


def test_never_cordoned_is_caught() -> None:
    ok, text = timeline((0.0, False)).cordoned_through(NODE, at(2), at(4))
    assert not ok and "never cordoned" in text


def test_other_nodes_do_not_count() -> None:
    recorded = timeline((0.0, False))
    recorded.changes.append(CordonChange(at(1), "127.10.0.2", True))
    ok, _ = recorded.cordoned_through(NODE, at(2), at(4))
    assert not ok


def test_cordon_spans_are_clipped_to_the_step() -> None:
    recorded = timeline((0.0, True), (3.0, False), (5.0, True), (6.0, False), (8.0, True))
    assert recorded.intervals(NODE, at(1), at(9)) == [(at(1), at(3)), (at(5), at(6)), (at(8), at(9))]
    assert recorded.intervals(NODE, at(3.5), at(4)) == []  # schedulable throughout
    assert recorded.intervals("127.10.0.9", at(0), at(9)) == []


def node(unschedulable: bool = False, ready: str = "True", applied: str | None = "rev-1",
         state: str = "configured", heartbeat: str = "12:00:00") -> dict[str, object]:
    annotations = {APPLIED: applied} if applied is not None else {}
    return {"metadata": {"name": "win-0001", "labels": {"proxyfleet.io/state": state},
                         "annotations": {**annotations, "other": "x"}},
            "spec": {"unschedulable": unschedulable},
            "status": {"addresses": [{"type": "InternalIP", "address": NODE}],
                       "conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}]}}


def test_a_node_finishing_wakes_the_judge_and_heartbeats_do_not() -> None:
    recorded = CordonTimeline(api=None)  # type: ignore[arg-type]
    recorded._changed("ADDED", node())
    assert recorded.nodes_changed.is_set()  # a Node seen for the first time
    for unchanged in (node(heartbeat="12:00:05"), node(state="applying")):
        recorded.nodes_changed.clear()
        recorded._changed("MODIFIED", unchanged)
        assert not recorded.nodes_changed.is_set()  # status times and state steps along the way
    for finished in (node(applied="rev-2"), node(applied="rev-2", unschedulable=True),
                     node(applied="rev-2", unschedulable=True, ready="False")):
        recorded.nodes_changed.clear()
        recorded._changed("MODIFIED", finished)
        assert recorded.nodes_changed.is_set()  # the claim, the cordon and readiness count
    recorded.nodes_changed.clear()
    recorded._changed("DELETED", node())
    assert recorded.nodes_changed.is_set()


async def test_the_watch_cache_answers_by_address_once_synced(api: client.ApiClient) -> None:
    """The Node at an address as the watch delivered it: nothing before the first list (a cache
    not yet filled says nothing), then each change as it arrives."""
    core = client.CoreV1Api(api)
    await asyncio.to_thread(core.create_node, node(heartbeat="2026-11-22T12:00:00Z"))
    recorded = CordonTimeline(api)
    assert recorded.node(NODE) is None and recorded.nodes() == []  # not following yet
    recorded.start()
    try:
        await wait_until(lambda: recorded.node(NODE) is not None, HANG)
        assert recorded.node("10.9.9.9") is None  # no Node there
        assert [n["metadata"]["name"] for n in recorded.nodes()] == ["win-0001"]
        await asyncio.to_thread(core.patch_node, "win-0001", {"spec": {"unschedulable": True}})
        await wait_until(lambda: ((recorded.node(NODE) or {}).get("spec") or {}).get("unschedulable"), HANG)
    finally:
        recorded.stop()


async def test_waiting_for_a_node_change_returns_when_one_arrives_or_at_the_bound() -> None:
    recorded = CordonTimeline(api=None)  # type: ignore[arg-type]
    assert await recorded.wait_for_node_change(0.01) is False
    recorded._changed("ADDED", node())
    assert await recorded.wait_for_node_change(30.0) is True


def test_cordoned_spans_clip_to_the_step_and_leave_the_last_open_until_its_end() -> None:
    changes = [(at(0), True), (at(3), False), (at(5), True)]
    assert cordoned_spans(changes, at(1), at(9)) == [(at(1), at(3)), (at(5), at(9))]
    assert cordoned_spans(changes, at(4), at(4.5)) == []


def test_a_late_watch_uncordon_beside_exact_outage_edges_doubles_a_budget_of_one() -> None:
    """Why the lab judges cordons on the store's clock: node A is cordoned 0 to 4 and down 1 to 3, then
    B is cordoned 5 to 9 and down 6 to 8 — never two unavailable. A watch that delivers A's uncordon
    7 s late (a loaded machine) makes A and B both unavailable at 6; the commits do not."""
    a, b = "127.10.0.1", "127.10.0.2"
    outages = {a: [(at(1), at(3))], b: [(at(6), at(8))]}
    committed = {a: [(at(0), True), (at(4), False)], b: [(at(5), True), (at(9), False)]}
    watched = {a: [(at(0.1), True), (at(11), False)], b: [(at(5.1), True), (at(9.1), False)]}

    def either(changes: dict[str, list[tuple[dt.datetime, bool]]]) -> int:
        return peak_unavailable({n: spans + cordoned_spans(changes[n], at(0), at(12))
                                 for n, spans in outages.items()}).count

    assert either(committed) == 1
    assert either(watched) == 2
