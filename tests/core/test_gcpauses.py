"""Garbage collections timed as the stalls they are."""

from __future__ import annotations

import gc

import pytest

from proxyfleet.core.gcpauses import GCPauses, process_gc_pauses


def test_each_collection_is_a_pause_from_its_start_to_its_stop() -> None:
    now = [100.0]
    pauses = GCPauses(clock=lambda: now[0])
    for began, lasted in ((100.0, 0.5), (103.0, 0.001), (105.0, 2.0)):  # 1 ms: jitter, not kept
        now[0] = began
        pauses.hook("start", {"generation": 2})
        now[0] = began + lasted
        pauses.hook("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert pauses.collections == 3
    assert pauses.paused(since=99.0) == 2.5 and pauses.worst(since=99.0) == 2.0
    assert pauses.paused(since=104.0) == 2.0  # only what fell in the window
    assert pauses.paused(since=100.2, until=100.4) == pytest.approx(0.2)


def test_a_stop_without_its_start_is_not_a_pause() -> None:
    # the hook installed mid-collection: its stop has no start to measure from
    pauses = GCPauses(clock=lambda: 50.0)
    pauses.hook("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    assert pauses.collections == 0 and pauses.paused(since=0.0) == 0.0


def test_the_process_hook_is_installed_once_and_times_real_collections() -> None:
    pauses = process_gc_pauses()
    assert process_gc_pauses() is pauses and gc.callbacks.count(pauses.hook) == 1
    before = pauses.collections
    gc.collect()
    assert pauses.collections == before + 1
