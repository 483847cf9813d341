"""report merge: the shards of one run joined into one run's report — all parts, once each, of one
version, node count, reconciler and options; anything else is one error naming what differs."""

from __future__ import annotations

import pytest

from proxyfleet.harness.conformance.merge import MergeError, merge
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult


def _shard(index: int, total: int, *names: str, status: str = "passed", duration: float = 10.0,
           **changes: object) -> ConformanceRun:
    checks = [CheckResult("127.10.0.1", "files", status, "none", "none", step="s")]  # type: ignore[arg-type]
    run = ConformanceRun(nodes=2, variant="correct", duration_s=duration, version="1.0",
                         config={"lab": {"nodes": 2, "shard": f"{index}/{total}"}},
                         scenarios=[ScenarioResult(n, "w", status, checks=list(checks)) for n in names])  # type: ignore[arg-type]
    run.shards = [{"index": index, "total": total}]
    for key, value in changes.items():
        setattr(run, key, value)
    return run


def test_the_parts_of_one_run_make_one_run() -> None:
    merged = merge([("b.json", _shard(2, 2, "c", duration=30.0)), ("a.json", _shard(1, 2, "a", "b"))])
    assert [s.name for s in merged.scenarios] == ["a", "b", "c"]  # in part order
    assert merged.duration_s == 30.0 and merged.reported_exit == 0 and merged.config == {"lab": {"nodes": 2}}
    assert merged.shards == [{"index": 1, "total": 2, "duration_s": 10.0, "scenarios": ["a", "b"]},
                             {"index": 2, "total": 2, "duration_s": 30.0, "scenarios": ["c"]}]
    failing = merge([("a", _shard(1, 2, "a")), ("b", _shard(2, 2, "b", status="failed"))])
    assert failing.reported_exit == 1


@pytest.mark.parametrize(("reports", "said"), [
    ([_shard(1, 2, "a"), _shard(2, 2, "b", version="2.0")], "b: proxyfleet version '2.0', but a has '1.0'"),
    ([_shard(1, 2, "a"), _shard(2, 2, "b", nodes=3)], "b: nodes per lab 3, but a has 2"),
    ([_shard(1, 2, "a"), _shard(2, 2, "b", variant="external")], "reconciler 'external'"),
    ([_shard(1, 2, "a"), _shard(2, 2, "b", config={"lab": {"nodes": 2, "workflow": ["remove"]}})], "b: options"),
    ([_shard(1, 2, "a"), _shard(2, 2, "a")], "the scenario a is in both a and b"),
    ([_shard(1, 3, "a"), _shard(2, 3, "b")], "part(s) 3/3 missing"),
    ([_shard(1, 2, "a"), _shard(1, 2, "b")], "b and a are both part 1/2"),
    ([_shard(1, 2, "a"), _shard(2, 3, "b")], "b is part 2/3, but a is one of 2 parts"),
    ([_shard(1, 2, "a"), _shard(2, 2, "b", shards=[])], "b is not one shard's report"),
])
def test_reports_that_are_not_one_runs_parts_are_refused(reports: list[ConformanceRun], said: str) -> None:
    with pytest.raises(MergeError) as raised:
        merge([(name, run) for name, run in zip("ab", reports, strict=True)])
    assert said in str(raised.value)


def test_the_worst_part_decides_the_exit_code() -> None:
    starved = _shard(2, 3, "b", command_exit=4)
    stopped = _shard(3, 3, "c", command_exit=1)  # stopped before every scenario ran: not a pass
    assert merge([("a", _shard(1, 3, "a")), ("b", starved), ("c", _shard(3, 3, "c"))]).reported_exit == 4
    assert merge([("a", _shard(1, 3, "a")), ("b", starved), ("c", stopped)]).reported_exit == 1
    interrupted = _shard(3, 3, "c", command_exit=130)  # Ctrl-C: no verdict on what it did not finish
    assert merge([("a", _shard(1, 3, "a")), ("b", starved), ("c", interrupted)]).reported_exit == 130
    assert merge([("a", _shard(1, 3, "a")), ("b", _shard(2, 3, "b", command_exit=1)),
                  ("c", interrupted)]).reported_exit == 1  # a failure found is still a failure
