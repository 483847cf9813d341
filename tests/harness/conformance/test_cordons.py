"""Judging "cordoned for the whole reboot" from a cordon timeline (pure)."""

import datetime as dt

from proxyfleet.harness.conformance.cordons import CordonChange, CordonTimeline

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
