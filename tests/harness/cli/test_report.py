"""``proxyfleet report show r.json``: the summary and the failures grouped by cause, filtered by
node or check, exiting with the run's own code; a file that is not a report is one error line
that never echoes it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from proxyfleet.harness.cli import main
from proxyfleet.harness.conformance.report import render_html, write_json, write_junit
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult
from tests.harness.cli.commands import proxyfleet


def _report(tmp_path: Path, *results: CheckResult) -> Path:
    status = "failed" if any(r.status == "failed" for r in results) else \
        "inconclusive" if any(r.status == "inconclusive" for r in results) else "passed"
    run = ConformanceRun(nodes=3, variant="correct", duration_s=42.0, scenarios=[
        ScenarioResult("test_proxy_added_at_runtime", "runtime-add", status, checks=list(results))])  # type: ignore[arg-type]
    path = tmp_path / "r.json"
    write_json(run, path)
    return path


def _check(node: str, check: str, status: str, observed: str) -> CheckResult:
    return CheckResult(node, check, status, "as Proxy status", observed, step="proxy added")  # type: ignore[arg-type]


def test_failures_grouped_by_cause_and_the_runs_exit_code(tmp_path: Path) -> None:
    path = _report(tmp_path, *[_check(f"127.10.0.{i}", "registry-env", "failed", "NO_PROXY joined with ';'")
                               for i in (1, 2, 3)], _check("127.10.0.2", "certificates", "failed", "missing the CA"))
    result = proxyfleet("report", "show", str(path), cwd=tmp_path)  # as a user runs it
    assert result.returncode == 1, result.stderr
    out = " ".join(result.stdout.split())  # whatever the terminal's width
    assert out.startswith("FAILED 1 scenario(s), 3 node(s) per lab, reconciler correct, 42 s: 0 passed, 1 failed")
    assert "2 cause(s), the most widespread first:" in out
    assert "registry-env on 3 nodes after 'proxy added' (runtime-add): NO_PROXY joined with ';'" in out
    assert "nodes: 127.10.0.1, 127.10.0.2, 127.10.0.3; expected as Proxy status" in out
    narrowed = CliRunner().invoke(main, ["report", "show", str(path), "--node", "127.10.0.1"], terminal_width=200)
    assert "1 cause(s) (filtered: 127.10.0.1)" in narrowed.output and "certificates" not in narrowed.output
    only = CliRunner().invoke(main, ["report", "show", str(path), "--check", "certificates"], terminal_width=200)
    assert "certificates on 1 node" in only.output and "registry-env on" not in only.output
    assert only.exit_code == 1  # the run's verdict, not the filter's


def test_a_passing_and_an_inconclusive_run_keep_their_codes(tmp_path: Path) -> None:
    passing = _report(tmp_path, _check("127.10.0.1", "files", "passed", "none"))
    result = CliRunner().invoke(main, ["report", "show", str(passing)], terminal_width=200)
    assert result.exit_code == 0 and "PASSED" in result.output and "no failed or inconclusive check" in result.output
    starved = _report(tmp_path, _check("127.10.0.1", "node-ready", "inconclusive", "the lab's kubelet lagged 9 s"))
    result = CliRunner().invoke(main, ["report", "show", str(starved)], terminal_width=200)
    assert result.exit_code == 4 and "INCONCLUSIVE" in result.output
    assert "node-ready (inconclusive) on 1 node" in result.output


def test_the_commands_own_exit_code_wins_over_what_the_checks_say(tmp_path: Path) -> None:
    path = _report(tmp_path, _check("127.10.0.1", "files", "passed", "none"))
    data = json.loads(path.read_text())
    assert data["exit_code"] == 0
    data["exit_code"] = 1  # e.g. stopped by CI before every scenario ran: what passed is not a pass
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["report", "show", str(path)], terminal_width=200)
    assert result.exit_code == 1 and result.output.startswith("FAILED")
    path.write_text(json.dumps({"nodes": 1, "variant": "x", "scenarios": ["x"]}))
    result = CliRunner().invoke(main, ["report", "show", str(path)])
    assert result.exit_code == 1 and "is not a proxyfleet conformance --json report" in result.output


def test_a_cluster_still_rolling_after_its_put_back_is_in_every_report(tmp_path: Path) -> None:
    """A cluster run whose nodes were not back within --wait-restored exits 3 after its checks
    passed; the reports rewritten after the wait say so (they were written before, saying 0): the
    JSON, report show, the HTML's verdict and a failing JUnit case."""
    run = ConformanceRun(nodes=2, variant="the cluster's own", scenarios=[
        ScenarioResult("test_proxy_added_at_runtime", "runtime-add", "passed",
                       checks=[_check("10.1.0.5", "files", "passed", "none")])],
        command_exit=3, put_back={"waited_s": 900, "still_rolling": ["win-0002: NotReady"]})
    path = tmp_path / "r.json"
    write_json(run, path)
    data = json.loads(path.read_text())
    assert data["exit_code"] == 3 and data["put_back"]["still_rolling"] == ["win-0002: NotReady"]
    result = CliRunner().invoke(main, ["report", "show", str(path)], terminal_width=200)
    assert result.exit_code == 3 and result.output.startswith("FAILED")
    assert "the cluster was still rolling 900 s after its put-back:" in result.output
    assert "win-0002: NotReady" in result.output
    html = render_html(ConformanceRun.from_json(data))
    assert 'badge fail">FAILED' in html and "win-0002: NotReady" in html
    write_junit(run, tmp_path / "r.xml")
    case = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase[@name='put back']")
    assert case is not None and case.find("failure") is not None
    # back in time: every report says so, and passes
    run.command_exit, run.put_back = 0, {"waited_s": 900, "still_rolling": []}
    write_json(run, path)
    result = CliRunner().invoke(main, ["report", "show", str(path)], terminal_width=200)
    assert result.exit_code == 0 and "its nodes were back within 900 s" in result.output
    write_junit(run, tmp_path / "r.xml")
    case = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase[@name='put back']")
    assert case is not None and case.find("failure") is None
    # a put-back the cluster refused, and a wait that could not start: said as what they are
    run.command_exit, run.put_back = 1, {"failed": "1 object(s) could not be put back"}
    assert run.put_back_lines() == (False, ["the cluster could not be put back: 1 object(s) could not be put back"])
    run.put_back = {"waited_s": 900, "still_rolling": [], "error": "cannot load kubeconfig"}
    assert run.put_back_lines()[1][0].endswith("its nodes could not be waited for: cannot load kubeconfig")


def test_an_interrupted_run_is_neither_a_pass_nor_a_failure_in_every_report(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM stopped the run (exit 130): what it judged to the end stays, and every
    report says INTERRUPTED, not PASSED because what finished passed."""
    run = ConformanceRun(nodes=2, variant="correct", scenarios=[
        ScenarioResult("test_proxy_added_at_runtime", "runtime-add", "passed",
                       checks=[_check("127.10.0.1", "files", "passed", "none")])], command_exit=130)
    path = tmp_path / "r.json"
    write_json(run, path)
    assert json.loads(path.read_text())["exit_code"] == 130
    result = CliRunner().invoke(main, ["report", "show", str(path)], terminal_width=200)
    assert result.exit_code == 130 and result.output.startswith("INTERRUPTED")
    assert 'badge skip">INTERRUPTED' in render_html(ConformanceRun.from_json(json.loads(path.read_text())))


def test_what_is_not_a_report_is_one_error_line(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("user:hunter2\n")
    for path, said in ((secret, "is not a proxyfleet conformance --json report"),
                       (tmp_path / "missing.json", "cannot read")):
        result = CliRunner().invoke(main, ["report", "show", str(path)])
        assert result.exit_code == 1 and said in result.output, result.output
        assert "hunter2" not in result.output and "Traceback" not in result.output
    unknown = CliRunner().invoke(main, ["report", "show", str(secret), "--check", "registry"])
    assert unknown.exit_code == 2 and "--check registry: no such check; one of converged, registry-env" in unknown.output


def test_merge_joins_shard_reports_into_every_report_kind(tmp_path: Path) -> None:
    paths = []
    for index, name in ((1, "test_proxy_added_at_runtime"), (2, "test_proxy_then_trusted_ca_removed")):
        run = ConformanceRun(nodes=3, variant="correct", duration_s=40.0 + index, scenarios=[
            ScenarioResult(name, "runtime-add", "passed", checks=[_check("127.10.0.1", "files", "passed", "none")])])
        run.shards = [{"index": index, "total": 2}]
        paths.append(tmp_path / f"shard-{index}.json")
        write_json(run, paths[-1])
    result = CliRunner().invoke(main, ["report", "merge", *map(str, paths), "--json", str(tmp_path / "m.json"),
                                       "--junit", str(tmp_path / "m.xml"), "--html", str(tmp_path / "m.html")])
    assert result.exit_code == 0, result.output
    assert "2 part(s), 2 scenario(s), longest part 42 s: 2 passed, 0 failed" in result.output
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [s["index"] for s in merged["shards"]] == [1, 2] and len(merged["scenarios"]) == 2
    assert ET.parse(tmp_path / "m.xml").getroot().find("testsuite") is not None
    assert "PASSED" in (tmp_path / "m.html").read_text()
    missing = CliRunner().invoke(main, ["report", "merge", str(paths[0])])
    assert missing.exit_code == 1 and "part(s) 2/2 missing" in missing.output and "Traceback" not in missing.output


def test_show_and_merge_name_the_step_closest_to_its_deadline(tmp_path: Path) -> None:
    paths = []
    for index, (name, slowest) in enumerate((("test_proxy_added_at_runtime", 14.7), ("test_remove", 41.0)), start=1):
        timeline = [{"step": "proxy added", "converged_s": {"127.10.0.1": 2.0, "127.10.0.2": slowest}, "nodes": 2,
                     "deadline_s": 60.0}]
        run = ConformanceRun(nodes=2, variant="correct", duration_s=40.0, scenarios=[
            ScenarioResult(name, "runtime-add", "passed", timeline=timeline,
                           checks=[_check("127.10.0.1", "files", "passed", "none")])])
        run.shards = [{"index": index, "total": 2}]
        paths.append(tmp_path / f"shard-{index}.json")
        write_json(run, paths[-1])
    shown = CliRunner().invoke(main, ["report", "show", str(paths[0])])
    assert shown.exit_code == 0, shown.output
    assert ("closest to a deadline: test_proxy_added_at_runtime, step 'proxy added': its last node converged "
            "after 14.7 s of 60 s (24%) no failed") in " ".join(shown.output.split())  # whatever the width
    merged = CliRunner().invoke(main, ["report", "merge", *map(str, paths), "--html", str(tmp_path / "m.html")])
    assert merged.exit_code == 0, merged.output
    closest = ("closest to a deadline: test_remove, step &#x27;proxy added&#x27;: its last node converged after "
               "41.0 s of 60 s (68%) — a machine half as fast may fail a correct setup here")
    assert closest.replace("&#x27;", "'") in merged.output
    assert f'<p class="skip">{closest}' in (tmp_path / "m.html").read_text()  # highlighted in the page


def _old_form(run: ConformanceRun, path: Path) -> Path:
    """``run``'s report as reports were written before the grouping: one record per node and check."""
    data = run.to_json()
    for written, scenario in zip(data["scenarios"], run.scenarios, strict=True):
        written["checks"] = [c.to_json() for c in scenario.checks]
    path.write_text(json.dumps(data, indent=2))
    return path


def test_reports_of_one_record_per_node_still_show_and_merge_into_grouped_ones(tmp_path: Path) -> None:
    runs = []
    for index in (1, 2):
        checks = [_check(f"127.10.0.{n}", "registry-env", "failed" if (index, n) == (2, 3) else "passed",
                         "NO_PROXY joined with ';'" if (index, n) == (2, 3) else "as Proxy status") for n in (1, 2, 3)]
        run = ConformanceRun(nodes=3, variant="correct", duration_s=40.0, scenarios=[
            ScenarioResult(f"test_{index}", "runtime-add", "failed" if index == 2 else "passed", checks=checks)])
        run.shards = [{"index": index, "total": 2}]
        runs.append(run)
    old = [_old_form(run, tmp_path / f"old-{k}.json") for k, run in enumerate(runs, start=1)]
    shown = CliRunner().invoke(main, ["report", "show", str(old[1])], terminal_width=200)
    assert shown.exit_code == 1 and "registry-env on 1 node after 'proxy added' (runtime-add)" in shown.output
    merged = CliRunner().invoke(main, ["report", "merge", *map(str, old), "--json", str(tmp_path / "m.json"),
                                       "--junit", str(tmp_path / "m.xml"), "--html", str(tmp_path / "m.html")])
    assert merged.exit_code == 1, merged.output
    data = json.loads((tmp_path / "m.json").read_text())
    assert [{"status": c["status"], "nodes": c["nodes"]} for c in data["scenarios"][1]["checks"]] == [
        {"status": "passed", "nodes": ["127.10.0.1", "127.10.0.2"]}, {"status": "failed", "nodes": ["127.10.0.3"]}]
    again = ConformanceRun.from_json(data)
    assert [s.checks for s in again.scenarios] == [s.checks for r in runs for s in r.scenarios]
    case = ET.parse(tmp_path / "m.xml").getroot().find(".//testcase[@name='test_2 [registry-env]']")
    assert case is not None and case.find("failure") is not None
    assert "NO_PROXY joined with &#x27;;&#x27;" in (tmp_path / "m.html").read_text()
    # the merged report, grouped, is what show reads
    shown = CliRunner().invoke(main, ["report", "show", str(tmp_path / "m.json")], terminal_width=200)
    assert shown.exit_code == 1 and "nodes: 127.10.0.3; expected as Proxy status" in shown.output
