"""The reports: the documented JSON schema, one JUnit testcase per scenario x check family, an
HTML page with the matrix, timeline, flows and violations — never a proxy credential, and whatever
characters nodes printed shown as escapes (XML and HTML stay parseable)."""

import json
import re
import xml.dom.minidom
import xml.etree.ElementTree as ET
from pathlib import Path

from proxyfleet.harness.conformance.report import render_html, write_json, write_junit
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult

SECRET = "http://o'brien:pa$(x)@proxy2.corp.internal:8080"


def _run() -> ConformanceRun:
    good = ScenarioResult("test_ok", "runtime-add", "passed", [
        CheckResult("127.10.0.1", "registry-env", "passed", "HTTPS_PROXY=x", "HTTPS_PROXY=x", "proxy added"),
        CheckResult("127.10.0.1", "reboots", "passed", "at most 1", "1", "proxy added"),
    ], duration_s=3.0, timeline=[{"step": "proxy added", "nodes": 2, "converged_s": {"127.10.0.1": 1.5,
                                                                                     "127.10.0.2": 2.5},
                                  "lag_s": {"lab (control plane, fleet, judge)": {"worst_s": 0.42, "stalled_s": 1.1},
                                            "mitmdump (proxy)": {"worst_s": 0.05, "stalled_s": 0.05}}}],
        flows={"proxy request quay.io 200": {"count": 4}})
    bad = ScenarioResult("test_bad", "change", "failed", [
        CheckResult("127.10.0.1", "registry-env", "failed", f"HTTPS_PROXY={SECRET}", "HTTPS_PROXY=unset", "url"),
        CheckResult("127.10.0.2", "registry-env", "passed", "a", "a", "url"),
        CheckResult("127.10.0.1", "firewall", "failed", "none", "1 refused: internet-registry", "url"),
    ], duration_s=5.0, violations=[{"time": "t", "origin": "internet-registry", "source": "127.10.0.1",
                                    "source_port": 1}])
    skipped = ScenarioResult("test_skip", "deconfigure", "skipped", [], error="needs at least two nodes")
    return ConformanceRun(nodes=2, variant="correct", scenarios=[good, bad, skipped], duration_s=9.0)


def test_json_follows_the_documented_schema_without_credentials(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(_run(), path)
    text = path.read_text()
    assert "pa$(x)" not in text and "o'brien" not in text
    data = json.loads(text)
    assert data["summary"] == {"passed": 1, "failed": 1, "skipped": 1, "inconclusive": 0}
    assert {"duration_s", "nodes", "scenarios"} <= set(data)
    scenario = data["scenarios"][1]
    assert {"name", "workflow", "status", "checks"} <= set(scenario)
    assert set(scenario["checks"][0]) >= {"node", "check", "status", "expected", "observed"}
    assert scenario["checks"][0]["expected"] == "HTTPS_PROXY=http://***:***@proxy2.corp.internal:8080"


def test_junit_has_one_testcase_per_scenario_and_check_family(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    write_junit(_run(), path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names == ["test_ok [registry-env]", "test_ok [reboots]", "test_bad [registry-env]",
                     "test_bad [firewall]", "test_skip [scenario]"]
    failed = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    assert failed["test_ok [reboots]"] is None
    failure = failed["test_bad [registry-env]"]
    assert failure is not None and failure.get("message") == "1 of 2 registry-env check(s) failed"
    assert "127.10.0.1: registry-env after 'url'" in (failure.text or "")
    assert suite.get("failures") == "2" and suite.get("skipped") == "1"
    assert b"pa$(x)" not in path.read_bytes()


def test_html_shows_each_steps_event_loop_lag_per_process() -> None:
    page = render_html(_run())
    assert "Event-loop lag" in page and "lab (control plane, fleet, judge)" in page and "0.42" in page


def test_html_shows_matrix_timeline_flows_and_violations() -> None:
    page = render_html(_run())
    assert "pa$(x)" not in page and "o&#x27;brien" not in page
    assert "FAILED" in page
    assert page.count('class="cell fail"') == 2 and 'class="cell pass"' in page
    assert "<svg" in page and "2/2 in 2.50s" in page  # rollout timeline: both nodes, last at 2.5 s
    assert "proxy request quay.io 200" in page
    assert "internet-registry" in page and "Firewall violations" in page


def _cluster_run() -> ConformanceRun:
    reason = "needs lab evidence: a service's environment is not observable on Windows"
    scenario = ScenarioResult("test_cluster", "remove", "passed", [
        CheckResult("10.0.0.5", "registry-env", "passed", "x", "x", "proxy removed"),
        CheckResult("10.0.0.5", "service-environment", "skipped", "what it proves", reason, "proxy removed"),
        CheckResult("10.0.0.6", "service-environment", "skipped", "what it proves", reason, "proxy removed"),
        CheckResult("10.0.0.5", "pull-intranet", "skipped", "r/a:1 direct succeeds", "pull succeeded; which way …", "s"),
        CheckResult("10.0.0.6", "pull-intranet", "passed", "r/a:1 direct", "direct", "s"),
    ], duration_s=1.0)
    return ConformanceRun(nodes=2, variant="the cluster's own", scenarios=[scenario], duration_s=1.0)


def test_a_family_never_judged_is_a_skipped_testcase_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    write_junit(_cluster_run(), path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    skipped = cases["test_cluster [service-environment]"].find("skipped")
    assert skipped is not None and skipped.get("message") == \
        "needs lab evidence: a service's environment is not observable on Windows"
    assert cases["test_cluster [pull-intranet]"].find("skipped") is None  # judged on one node
    assert cases["test_cluster [registry-env]"].find("skipped") is None
    assert suite.get("skipped") == "1" and suite.get("failures") == "0"


def test_html_lists_skipped_checks_with_why() -> None:
    page = render_html(_cluster_run())
    assert "Skipped checks" in page
    assert "needs lab evidence: a service&#x27;s environment is not observable on Windows" in page
    assert '<td class="cell skip"' in page and "2 of 2" in page
    assert "Skipped checks" not in render_html(_run())


def _noisy_run() -> ConformanceRun:
    """A node that printed control characters (an ANSI colour, NUL, a vertical tab) and worse."""
    noisy = "curl: \x00\x1b[31m\x0bfailed\x7f \ud800 \ufffe"
    scenario = ScenarioResult("test_noisy\x1b", "runtime-add", "failed", [
        CheckResult("10.0.0.5", "fetch-http", "failed", "succeeds", noisy, "step\x01"),
        CheckResult("10.0.0.5", "pull-intranet", "skipped", "x", f"{noisy} {SECRET}", "step\x01"),
    ], duration_s=1.0, error=None)
    return ConformanceRun(nodes=1, variant="correct\x08", scenarios=[scenario], duration_s=1.0)


def test_junit_parses_whatever_nodes_printed_showing_the_characters_as_escapes(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    write_junit(_noisy_run(), path)
    root = ET.parse(path).getroot()  # ElementTree (expat)
    xml.dom.minidom.parse(str(path))  # and the DOM's build over it: both refuse any ill-formed byte
    text = path.read_bytes().decode("utf-8")
    # nothing outside XML 1.0's Char production, written raw or as a character reference
    assert not re.search(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", text)
    assert set(re.findall(r"&#(\d+);", text)) <= {"9", "10", "13"} and "&#x" not in text
    failure = next(root.iter("failure"))
    assert "curl: \\x00\\x1b[31m\\x0bfailed\\x7f \\ud800 \\ufffe" in (failure.text or "")
    skipped = next(root.iter("skipped"))
    assert (skipped.get("message") or "").startswith("curl: \\x00\\x1b[31m")
    assert "pa$(x)" not in text and "***:***@proxy2.corp.internal" in text  # redacted first, then escaped
    assert "test_noisy\\x1b [fetch-http]" in [c.get("name") for c in root.iter("testcase")]


def test_html_shows_the_same_escapes_and_no_raw_control_character() -> None:
    page = render_html(_noisy_run())
    assert "curl: \\x00\\x1b[31m\\x0bfailed\\x7f \\ud800 \\ufffe" in page
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]", page)
    page.encode("utf-8")  # a lone surrogate would not even write


def test_a_check_the_lab_starved_is_a_junit_error_not_a_failure(tmp_path: Path) -> None:
    starved = ScenarioResult("test_starved", "change", "inconclusive", [
        CheckResult("127.10.0.1", "node-ready", "inconclusive", "Ready", "Node not Ready (NodeStatusUnknown) while "
                    "the lab's own event loop stalled up to 3.0 s", "url")])
    run = ConformanceRun(nodes=1, variant="correct", scenarios=[starved])
    write_junit(run, tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("0", "1")
    [error] = suite.iter("error")
    assert "inconclusive: the lab was starved" in (error.get("message") or "")
    page = render_html(run)
    assert "INCONCLUSIVE" in page and "1 inconclusive" in page
