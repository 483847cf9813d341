"""Graceful termination's decisions, pure: the grace period a DELETE gets, when a pod goes at once,
and a second DELETE that may only shorten it. Through the API server and a kubelet:
``test_workloads`` and ``tests/simulators/windows/test_kubelet``."""

from __future__ import annotations

import datetime as dt

import pytest

from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.termination import (
    grace_period,
    marked_for_deletion,
    requested_grace,
    terminating,
)

BOUND = {"metadata": {"name": "p"}, "spec": {"nodeName": "win-0001", "terminationGracePeriodSeconds": 20},
         "status": {"phase": "Running"}}
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_the_grace_period_comes_from_the_request_else_the_pod_else_thirty_seconds() -> None:
    assert grace_period(BOUND, None) == 20
    assert grace_period(BOUND, 5) == 5
    assert grace_period({**BOUND, "spec": {"nodeName": "win-0001"}}, None) == 30


def test_a_pod_with_nothing_to_stop_goes_at_once() -> None:
    assert grace_period({**BOUND, "spec": {}}, None) == 0  # never scheduled
    assert grace_period({**BOUND, "status": {"phase": "Succeeded"}}, None) == 0
    assert grace_period(BOUND, 0) == 0  # forced


def test_the_request_body_wins_over_the_query_and_nonsense_is_refused() -> None:
    assert requested_grace({"gracePeriodSeconds": "3"}, {"gracePeriodSeconds": 7}) == 7
    assert requested_grace({"gracePeriodSeconds": "3"}, None) == 3
    assert requested_grace({}, None) is None
    with pytest.raises(APIError, match="gracePeriodSeconds"):
        requested_grace({"gracePeriodSeconds": "soon"}, None)
    with pytest.raises(APIError, match="0 or more"):
        requested_grace({}, {"gracePeriodSeconds": -1})


def test_a_second_delete_may_only_shorten_the_grace_period() -> None:
    marked = marked_for_deletion(BOUND, 20, NOW)
    assert marked is not None and terminating(marked) and not terminating(BOUND)
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:20Z"
    assert marked_for_deletion(marked, 30, NOW) is None  # longer: nothing changes
    shorter = marked_for_deletion(marked, 5, NOW)
    assert shorter is not None and shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    assert "deletionTimestamp" not in BOUND["metadata"]  # the input is not touched
