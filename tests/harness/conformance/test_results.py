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
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult


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
