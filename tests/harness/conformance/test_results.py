"""The one result schema: round trips through JSON, refuses what it does not know, and the
command's collector tells failed checks from a broken scenario by how it ended, not by text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress

from proxyfleet.harness.cli.conformance import Collector, summary_table
from proxyfleet.harness.conformance.plugin import PROPERTY
from proxyfleet.harness.conformance.results import (
    CheckResult,
    ConformanceRun,
    ScenarioResult,
    expand_checks,
    group_checks,
)


def scenario(**overrides: Any) -> ScenarioResult:
    fields: dict[str, Any] = dict(
        name="test_x", workflow="change", status="failed", ending="checks-failed", nodes=2,
        checks=[CheckResult("127.10.0.1", "registry-env", "failed", "HTTPS_PROXY=a", "unset", "url")],
        duration_s=1.5, timeline=[{"step": "url", "nodes": 2, "converged_s": {"127.10.0.1": 1.0}}],
        flows={"proxy request quay.io 200": {"count": 2}},
        violations=[{"time": "t", "origin": "internet-registry", "source": "127.10.0.1", "source_port": 1}],
        api_internal_host="api-int.lab.example")
    fields.update(overrides)
    return ScenarioResult(**fields)


def test_a_run_round_trips_through_json() -> None:
    run = ConformanceRun(nodes=2, variant="correct", duration_s=3.0,
                         scenarios=[scenario(), scenario(name="test_y", status="passed", ending="passed",
                                                         checks=[], error="")])
    again = ConformanceRun.from_json(json.loads(json.dumps(run.to_json())))
    assert again == run


@pytest.mark.parametrize(("field", "value"), [("status", "maybe"), ("ending", "sort-of")])
def test_unknown_values_are_refused(field: str, value: str) -> None:
    data = scenario().to_json()
    data[field] = value
    with pytest.raises(ValueError, match="unknown"):
        ScenarioResult.from_json(data)


def report(nodeid: str, when: str, outcome: str, text: str = "", data: ScenarioResult | None = None) -> pytest.TestReport:
    properties = [(PROPERTY, json.dumps(data.to_json()))] if data is not None else []
    return pytest.TestReport(nodeid, ("scenarios/x.py", 1, nodeid), {}, outcome,  # type: ignore[arg-type]
                             text or None, when, user_properties=properties)


def collect(*reports: pytest.TestReport) -> ConformanceRun:
    run = ConformanceRun(nodes=2, variant="correct")
    with Progress(disable=True) as progress:
        collector = Collector(run, progress)
        for item in reports:
            collector.pytest_runtest_logreport(item)
    return run


def test_failed_checks_are_not_an_error_whatever_the_text() -> None:
    run = collect(report("x::t", "setup", "passed"),
                  report("x::t", "call", "failed", "AssertionError: something unrelated"),
                  report("x::t", "teardown", "passed", data=scenario(ending="checks-failed")))
    [found] = run.scenarios
    assert found.status == "failed" and found.error == "" and found.failures()


def test_a_broken_scenario_keeps_its_error_even_when_it_mentions_checks() -> None:
    text = "RuntimeError: 3 conformance check(s) failed to start"  # looks like, is not, a checks failure
    run = collect(report("x::t", "setup", "passed"), report("x::t", "call", "failed", text),
                  report("x::t", "teardown", "passed", data=scenario(ending="error", checks=[])))
    [found] = run.scenarios
    assert found.status == "failed" and "failed to start" in found.error


def test_a_scenario_whose_lab_never_started_is_reported() -> None:
    run = collect(report("x::t", "setup", "failed", "OSError: no free port"), report("x::t", "teardown", "passed"))
    [found] = run.scenarios
    assert found.status == "failed" and found.ending == "error" and "no free port" in found.error


def test_the_summary_names_what_a_broken_scenario_raised_not_where() -> None:
    def start_lab() -> None:
        raise RuntimeError("the proxy exited during start-up; its output:\ncache.log:\nFATAL: shm_open")
    try:
        start_lab()
    except RuntimeError as exc:
        longrepr = pytest.ExceptionInfo.from_exception(exc).getrepr()
    failed = pytest.TestReport("x::t", ("scenarios/x.py", 1, "x::t"), {}, "failed", longrepr, "setup")
    run = collect(failed, report("x::t", "teardown", "passed"))
    [found] = run.scenarios
    assert found.error.startswith("RuntimeError: the proxy exited during start-up")
    assert "FATAL: shm_open" in found.error and "start_lab()" in found.error  # and the traceback after it
    console = Console(width=300, record=True)
    console.print(summary_table(run))
    assert "RuntimeError: the proxy exited during start-up; its output:" in console.export_text()


def test_a_run_the_lab_starved_is_neither_passed_nor_failed() -> None:
    unjudged = CheckResult("127.10.0.1", "node-ready", "inconclusive", "Ready", "Node not Ready (NodeStatusUnknown) "
                           "while the lab's own event loop stalled up to 3.0 s", "proxy added")
    starved = scenario(status="inconclusive", ending="passed", checks=[unjudged])
    run = ConformanceRun(nodes=2, variant="correct", scenarios=[starved, scenario(status="passed", checks=[])])
    assert not run.passed and run.exit_code == 4
    assert run.summary() == {"passed": 1, "failed": 0, "skipped": 0, "inconclusive": 1}
    assert ConformanceRun.from_json(json.loads(json.dumps(run.to_json()))).exit_code == 4
    failed = ConformanceRun(nodes=2, variant="correct", scenarios=[starved, scenario()])
    assert failed.exit_code == 1  # a failure is a failure, whatever else could not be judged
    assert ConformanceRun(nodes=2, variant="correct", scenarios=[scenario(status="passed", checks=[])]).exit_code == 0


def _fleet_checks() -> list[CheckResult]:
    """As a scenario records them: step by step, node by node, check by check; node 3 fails."""
    return [CheckResult(f"127.10.0.{node}", check, "failed" if (node, check, step) == (3, "firewall", "b") else "passed",
                        "none", "1 refused" if (node, check, step) == (3, "firewall", "b") else "none", step)
            for step in ("a", "b") for node in range(1, 6) for check in ("registry-env", "firewall", "files")]


def test_identical_results_are_one_record_with_their_nodes_and_come_back_in_order() -> None:
    checks = _fleet_checks()
    grouped = group_checks(checks)
    assert len(grouped) == 7  # 3 checks x 2 steps, and node 3's failure
    assert grouped[0] == {"check": "registry-env", "status": "passed", "expected": "none", "observed": "none",
                          "step": "a", "nodes": [f"127.10.0.{n}" for n in range(1, 6)]}
    assert [r["nodes"] for r in grouped if r["status"] == "failed"] == [["127.10.0.3"]]
    assert expand_checks(grouped) == checks  # every node's verdict, in the order judged
    assert expand_checks(json.loads(json.dumps(grouped))) == checks


def test_reports_of_one_record_per_node_still_load() -> None:
    checks = _fleet_checks()
    old = [c.to_json() for c in checks]  # as reports were written before the grouping
    assert set(old[0]) == {"node", "check", "status", "expected", "observed", "step"}
    assert expand_checks(old) == checks
    data = scenario(checks=checks).to_json()
    data["checks"] = old
    assert ScenarioResult.from_json(data).checks == checks
    assert expand_checks([{"node": "n", "check": "files", "status": "passed", "expected": "", "observed": ""}]) == \
        [CheckResult("n", "files", "passed", "", "", "")]  # older still: no step


def test_a_node_judged_twice_alike_stays_twice_and_bad_node_lists_are_refused() -> None:
    twice = [CheckResult("n1", "destinations", "passed", "direct", "direct", "s")] * 2
    assert group_checks(twice)[0]["nodes"] == ["n1", "n1"] and expand_checks(group_checks(twice)) == twice
    for nodes in ("n1", None):
        with pytest.raises(TypeError):
            expand_checks([{"check": "files", "status": "passed", "expected": "", "observed": "", "nodes": nodes}])
    with pytest.raises(KeyError):
        expand_checks([{"check": "files", "status": "passed", "expected": "", "observed": ""}])
    with pytest.raises(ValueError, match="unknown"):
        expand_checks([{"check": "files", "status": "ok", "expected": "", "observed": "", "nodes": ["n"]}])
