"""Failures grouped by cause: results that differ only in the node (its address, its names, how
long it took) are one line with the nodes listed; a different observation, step or scenario is
another; filters by node and check."""

from __future__ import annotations

from proxyfleet.harness.conformance.causes import SHOWN_NODES, failure_causes, pattern
from proxyfleet.harness.conformance.report import render_html
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult


def _result(node: str, check: str, observed: str, step: str = "proxy added", status: str = "failed") -> CheckResult:
    return CheckResult(node=node, check=check, status=status, expected="as Proxy status", observed=observed,  # type: ignore[arg-type]
                       step=step)


def _run() -> ConformanceRun:
    nodes = [f"127.10.0.{i}" for i in range(1, 11)]
    change = ScenarioResult("test_proxy_changed", "change", "failed", checks=[
        *[_result(n, "registry-env", "NO_PROXY joined with ';'") for n in nodes],
        *[_result(n, "converged", f"not settled: {n} (WIN-{i:04d}) still at the old revision after {60 + i}.5s")
          for i, n in enumerate(nodes[:3], 1)],
        _result(nodes[0], "registry-env", "NO_PROXY joined with ';'", step="proxy changed"),
        _result(nodes[1], "certificates", "missing the proxy CA"),
        _result(nodes[2], "node-ready", "Node win-0003 NotReady", status="inconclusive"),
        _result(nodes[3], "files", "none left", status="passed"),
    ])
    add = ScenarioResult("test_proxy_added_at_runtime", "runtime-add", "failed",
                         checks=[_result(nodes[0], "registry-env", "NO_PROXY joined with ';'")])
    return ConformanceRun(nodes=10, variant="external", scenarios=[change, add])


def test_what_names_the_node_or_its_timing_is_not_part_of_the_cause() -> None:
    assert pattern("not settled: 127.10.0.1 (WIN-0001) after 61.5s") == \
        pattern("not settled: 127.10.0.2 (WIN-0002) after 63.0s")
    assert pattern("ip-10-0-1-5.ec2.internal NotReady", "ip-10-0-1-5.ec2.internal") == "<node> NotReady"
    assert pattern("NO_PROXY joined with ';'") != pattern("NO_PROXY joined with ' '")


def test_one_line_per_scenario_step_check_and_pattern_the_widest_first() -> None:
    causes = failure_causes(_run())
    lines = [c.describe() for c in causes]
    assert lines[0] == "registry-env on 10 nodes after 'proxy added' (change): NO_PROXY joined with ';'"
    assert causes[0].node_list() == ", ".join(f"127.10.0.{i}" for i in range(1, SHOWN_NODES + 1)) + " and 2 more"
    assert lines[1].startswith("converged on 3 nodes after 'proxy added' (change): not settled: 127.10.0.1 (WIN-0001)")
    # another step, another scenario: other causes, though the text is the same
    assert "registry-env on 1 node after 'proxy changed' (change): NO_PROXY joined with ';'" in lines
    assert "registry-env on 1 node after 'proxy added' (runtime-add): NO_PROXY joined with ';'" in lines
    # inconclusive last, said so; passed results are no cause
    assert lines[-1] == "node-ready (inconclusive) on 1 node after 'proxy added' (change): Node win-0003 NotReady"
    assert len(causes) == 6


def test_filters_by_node_and_check() -> None:
    on_two = failure_causes(_run(), nodes=["127.10.0.2"])
    assert {(c.check, c.nodes) for c in on_two} == {("registry-env", ("127.10.0.2",)),
                                                    ("converged", ("127.10.0.2",)), ("certificates", ("127.10.0.2",))}
    only = failure_causes(_run(), checks=["certificates", "node-ready"])
    assert [c.check for c in only] == ["certificates", "node-ready"]
    assert failure_causes(_run(), nodes=["127.10.0.9"], checks=["certificates"]) == []


def test_the_html_report_opens_with_the_same_causes() -> None:
    html = render_html(_run())
    assert html.index("<h2>Failures by cause</h2>") < html.index('<h2 id="test_proxy_changed">')
    assert "<td>registry-env</td><td>10</td><td>proxy added</td>" in html
    assert "<td>node-ready (inconclusive)</td><td>1</td>" in html
    assert "No failures" not in render_html(ConformanceRun(nodes=1, variant="correct")) and \
        "Failures by cause" not in render_html(ConformanceRun(nodes=1, variant="correct"))
