"""The reports: the documented JSON schema, one JUnit testcase per scenario x check family, an
HTML page with the matrix, timeline, flows and violations — never a proxy credential, and whatever
characters nodes printed shown as escapes (XML and HTML stay parseable)."""

import asyncio
import contextlib
import html
import json
import re
import shutil
import urllib.parse
import xml.dom.minidom
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from proxyfleet.harness.conformance import report
from proxyfleet.harness.conformance.fleetsummary import LARGE_FLEET
from proxyfleet.harness.conformance.report import dumps, render_html, write_json, write_junit
from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult

SECRET = "http://o'brien:pa$(x)@proxy2.corp.internal:8080"


def _run() -> ConformanceRun:
    good = ScenarioResult("test_ok", "runtime-add", "passed", [
        CheckResult("127.10.0.1", "registry-env", "passed", "HTTPS_PROXY=x", "HTTPS_PROXY=x", "proxy added"),
        CheckResult("127.10.0.1", "reboots", "passed", "at most 1", "1", "proxy added"),
    ], duration_s=3.0, timeline=[{"step": "proxy added", "nodes": 2, "converged_s": {"127.10.0.1": 1.5,
                                                                                     "127.10.0.2": 2.5},
                                  "lag_s": {"lab (control plane, fleet, judge)": {"worst_s": 0.42, "stalled_s": 1.1,
                                                                                  "gc_s": 0.37, "gc_worst_s": 0.31},
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
    assert set(scenario["checks"][0]) == {"nodes", "check", "status", "expected", "observed", "step"}
    assert scenario["checks"][0]["expected"] == "HTTPS_PROXY=http://***:***@proxy2.corp.internal:8080"
    assert scenario["checks"][0]["nodes"] == ["127.10.0.1"]


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
    assert "<td>0.37 (longest 0.31)</td>" in page  # the collector's part, where it was measured


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


# A fleet as a real run records it (shaped like a 300-node runtime-add run's report): three steps,
# every node judged by every check after each, a few nodes failing or starved after the proxy.
STEPS = ("instances join", "an instance cordoned for maintenance", "proxy added")
PROXY = "http://proxy.corp.internal:3128"
NO_PROXY = (".cluster.local,.svc,10.0.0.0/16,10.0.5.20,10.128.0.0/14,127.0.0.1,172.30.0.0/16,"
            "api-int.lab.example.com,intranet.corp.internal,localhost,registry.corp.internal")
WORKFLOWS = ("install-time", "runtime-add", "change", "remove", "baseline", "join-after-change", "deconfigure",
             "drift", "proxy-shapes", "faults", "runtime-add", "change")


def _passes(step: str, node: str, index: int) -> list[tuple[str, str, str]]:
    """(check, expected, observed) of a node that passed ``step``."""
    proxied = step == "proxy added"
    env = (f"HTTP_PROXY='{PROXY}', HTTPS_PROXY='{PROXY}', NO_PROXY='{NO_PROXY}'" if proxied
           else "HTTP_PROXY=unset, HTTPS_PROXY=unset, NO_PROXY=unset")
    found = [
        ("converged", "settled within 1800s", f"settled after {4 + (index * 7919) % 37 * 3.71:.2f}s"),
        ("registry-env", env, env),
        ("certificates", f"baseline + {119 if proxied else 0} bundle certificate(s), none kept removed meanwhile",
         "exactly those"),
        ("services-restarted", "every egress service started after 2026-11-26T16:01:38.379+00:00" if proxied
         else "no restart (nothing changed on this node)", "all restarted" if proxied else "none restarted"),
        ("service-environment", env, "every service"),
        ("pull-internet", f"quay.io/openshift/windows-test:latest via {PROXY} (origin sees only the proxy)",
         "through the proxy, MITM certificate trusted"),
        ("pull-intranet", "registry.corp.internal/corp/agent:1.0 direct (no proxy, origin sees the node)",
         "direct, the origin saw the node"),
        ("fetch-http", f"http://ctldl.windowsupdate.com/ via {PROXY} (origin sees only the proxy)",
         "through the proxy (plain HTTP, absolute-form request)"),
        ("node-ready", "Ready, schedulable, no kubelet traffic to api-int.lab.example.com through a proxy", "Ready"),
        ("firewall", "no direct connection where the cluster names a proxy", "none"),
        ("reboots", "at most 1 (variables changed)", "1" if proxied else "0"),
        ("drained-while-down", "cordoned for every reboot", "cordoned for all 1 reboot(s)" if proxied else "no reboot"),
        ("drained", "no pod left on the node when it went down; PodDisruptionBudgets honoured", "no reboot"),
        ("disruption-budget", "at most 500 of 1000 instance(s) down at once", "at most 62 down and 150 cordoned"),
        ("credentials", "no proxy credential in anything the reconciler writes", "none found"),
    ]
    found.append(("trusted-ca", "the merged bundle", "labelled, holding it") if proxied else
                 ("files", "no file beyond the node's own", "none left"))
    return found


def _fleet_scenario(name: str, workflow: str, nodes: int, failing: tuple[int, ...], starved: int) -> ScenarioResult:
    checks: list[CheckResult] = []
    for step in STEPS:
        for index in range(1, nodes + 1):
            node = f"127.10.0.{index}"
            for check, expected, observed in _passes(step, node, index):
                status = "passed"
                if step == "proxy added" and index in failing and check in ("registry-env", "firewall",
                                                                            "services-restarted"):
                    status, observed = "failed", {
                        "registry-env": f"unreachable: lost the SSH session to {node}: SSH connection closed",
                        "firewall": "1 refused: internet-registry <script>alert(1)</script>\x1b[31m",
                        "services-restarted": f"not restarted: containerd (started 2026-11-26T16:06:{index % 60:02d}"
                                              ".015+00:00)"}[check]
                elif step == "proxy added" and index == starved and check == "node-ready":
                    status, observed = "inconclusive", ("Node not Ready (NodeStatusUnknown) while the lab's own "
                                                        "event loop stalled up to 3.0 s")
                checks.append(CheckResult(node, check, status, expected, observed, step))  # type: ignore[arg-type]
    timeline = [{"step": step, "nodes": nodes,
                 "converged_s": {f"127.10.0.{i}": round(4 + (i * 7919) % 37 * 3.71, 3) for i in range(1, nodes + 1)},
                 "lag_s": {"lab (control plane, fleet, judge, reconciler)": {"worst_s": 0.9, "stalled_s": 52.7}}}
                for step in STEPS]
    violations = [{"time": f"2026-11-26T16:00:33.{i:06d}+00:00", "origin": "internet-registry",
                   "source": f"127.10.0.{i % nodes + 1}", "source_port": 40000 + i} for i in range(4 * nodes)]
    return ScenarioResult(name, workflow, "failed" if failing else "passed", checks, duration_s=320.0,
                          ending="checks-failed" if failing else "passed", nodes=nodes, timeline=timeline,
                          flows={"proxy connect quay.io 200": {"count": nodes}}, violations=violations,
                          api_internal_host="api-int.lab.example.com")


def fleet_run(nodes: int, scenarios: int = 12, failing: tuple[int, ...] = (3, 97, 412, 997)) -> ConformanceRun:
    """``scenarios`` scenarios of ``nodes`` nodes; in every other one the ``failing`` nodes fail three
    checks after the proxy is added (one of them alike on each) and node 5 is left inconclusive."""
    failing = tuple(n for n in failing if n <= nodes)
    return ConformanceRun(nodes=nodes, variant="correct", duration_s=3600.0, scenarios=[
        _fleet_scenario(f"test_scenario_{k}", WORKFLOWS[k % len(WORKFLOWS)], nodes,
                        failing if k % 2 else (), 5 if k % 2 else 0) for k in range(scenarios)])


def test_json_writes_each_outcome_once_and_reads_back_every_nodes_verdict(tmp_path: Path) -> None:
    run = fleet_run(300, scenarios=2)
    path = tmp_path / "r.json"
    write_json(run, path)
    text = path.read_text()
    again = ConformanceRun.from_json(json.loads(text))
    assert [s.checks for s in again.scenarios] == [s.checks for s in run.scenarios]  # every verdict, in order
    assert again.scenarios[1].timeline == run.scenarios[1].timeline
    scenario = json.loads(text)["scenarios"][1]
    assert len(scenario["checks"]) < 250 < len(run.scenarios[1].checks) / 50
    failed = [record for record in scenario["checks"] if record["status"] == "failed"]
    assert {n for record in failed for n in record["nodes"]} == {"127.10.0.3", "127.10.0.97"}
    # one line per record whatever its nodes: the file stays readable, not 300 lines per outcome
    lines = text.splitlines()
    assert any(line.strip().startswith('{"check": "converged"') and "127.10.0.300" in line for line in lines)
    before = run.to_json()  # as reports were written before the grouping: a record per node, indented
    for written, recorded in zip(before["scenarios"], run.scenarios, strict=True):
        written["checks"] = [c.to_json() for c in recorded.checks]
    assert len(lines) < 4000 and len(text) < len(json.dumps(before, indent=2)) / 4


def test_json_of_the_old_one_record_per_node_form_still_reads(tmp_path: Path) -> None:
    run = fleet_run(60, scenarios=2)
    data = run.to_json()
    for scenario, written in zip(run.scenarios, data["scenarios"], strict=True):
        written["checks"] = [c.to_json() for c in scenario.checks]  # as reports were before the grouping
    again = ConformanceRun.from_json(json.loads(json.dumps(data)))
    assert again.to_json() == run.to_json()
    assert render_html(again) == render_html(run)


def test_dumps_is_json_with_plain_records_on_one_line() -> None:
    value = {"a": [{"x": 1, "nodes": ["n1", "n2"]}, {"y": None}], "b": {}, "c": {"d": {"e": 1.5}}, "f": "\x1b"}
    text = dumps(value)
    assert json.loads(text) == value
    keys = {True: [{}], 1.5: {"x": [1]}, None: {"y": {"z": 0}}}  # not text: written as JSON writes them
    assert json.loads(dumps(keys)) == json.loads(json.dumps(keys))
    assert text.splitlines() == ['{', '  "a": [', '    {"x": 1, "nodes": ["n1", "n2"]},', '    {"y": null}', '  ],',
                                 '  "b": {},', '  "c": {', '    "d": {"e": 1.5}', '  },', '  "f": "\\u001b"', '}']


def test_html_at_the_threshold_is_the_matrix_past_it_a_summary() -> None:
    small = render_html(fleet_run(LARGE_FLEET, scenarios=2))
    assert "Node &times; check" in small and 'id="filter"' not in small and "<script" not in small
    assert len(render_html(fleet_run(LARGE_FLEET)).encode()) < 5_000_000  # all twelve as matrices still fit
    large = render_html(fleet_run(LARGE_FLEET + 1, scenarios=2))
    assert "Node &times; check" not in large and 'class="cell' not in large
    assert large.count("<h3>Checks by step</h3>") == 2 and large.count('id="filter"') == 1


def test_html_past_the_threshold_shows_what_did_not_pass_in_full_and_counts_the_rest() -> None:
    page = render_html(fleet_run(300, scenarios=2))
    # counts per check and step: 298 of 300 passed registry-env after the proxy, 2 failed
    assert ('<tr class="f fail"><td>registry-env</td><td>proxy added</td><td>298</td><td>2</td><td>0</td>'
            "<td>0</td><td>300</td></tr>") in page
    # each failing node's own result in full; the identical ones on one row with their nodes
    assert "unreachable: lost the SSH session to 127.10.0.97: SSH connection closed" in page
    assert "<td>127.10.0.3, 127.10.0.97</td><td>2</td><td>proxy added</td><td>firewall</td>" in page
    assert "Node not Ready (NodeStatusUnknown)" in page and "<td>127.10.0.5</td><td>1</td>" in page
    # passes counted, not listed node by node
    assert "<td>300 nodes</td><td>Ready, schedulable" in page and "127.10.0.250" not in page.split("Passed (")[1]
    assert "other observation(s), each passed" in page  # convergence times differ on nearly every node
    # whatever the nodes printed, escaped as everywhere else
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m" in page
    assert page.count("<script>") == 1  # the filter's own


def test_html_past_the_threshold_stops_listing_at_its_budget_and_says_where_the_rest_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "NOT_PASSED_SHOWN", 2000)
    page = render_html(fleet_run(300, scenarios=2, failing=tuple(range(1, 301))))
    assert "more row(s), on" in page and "proxyfleet report show r.json --node ADDRESS" in page
    assert len(page) < 200_000


CHROMIUM = shutil.which("chromium")
BROWSER_DEADLINE_S = 180.0  # a cold start on a busy two-core CI machine; it only decides when something is broken


class DevTools:
    """One page of a headless Chromium, driven over the DevTools protocol (a websocket)."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.sent = 0
        self.events: list[str] = []  # the events that came while waiting for an answer

    async def event(self, method: str) -> None:
        """Until the page sends ``method`` (or sent it already)."""
        while method not in self.events:
            message = await self.socket.receive_json()
            self.events.append(str(message.get("method")))

    async def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event (its scripts have run)."""
        await self.call("Page.enable")
        await self.call("Page.navigate", url=url)
        await self.event("Page.loadEventFired")

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.sent += 1
        await self.socket.send_json({"id": self.sent, "method": method, "params": params})
        while True:  # events of the page come in between: skip them until the answer
            message = await self.socket.receive_json()
            if message.get("id") == self.sent:
                assert "error" not in message, message
                return message["result"]  # type: ignore[no-any-return]
            self.events.append(str(message.get("method")))

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")


async def _devtools_endpoint(stream: asyncio.StreamReader) -> str:
    while line := await stream.readline():
        if line.startswith(b"DevTools listening on "):
            return line.split(b" on ", 1)[1].strip().decode()
    raise AssertionError("chromium ended without a DevTools endpoint")


@contextlib.asynccontextmanager
async def _browser(profile: Path) -> AsyncIterator[DevTools]:
    assert CHROMIUM is not None
    process = await asyncio.create_subprocess_exec(
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", "about:blank", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert process.stderr is not None
    drain: asyncio.Task[bytes] | None = None
    try:
        browser = await asyncio.wait_for(_devtools_endpoint(process.stderr), BROWSER_DEADLINE_S)
        # the rest of its log is read and dropped: a full pipe would stop the browser
        drain = asyncio.create_task(process.stderr.read(), name="chromium-stderr")
        port = urllib.parse.urlsplit(browser).port
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=BROWSER_DEADLINE_S)) as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as answer:
                targets = await answer.json()
            [target] = [t for t in targets if t["type"] == "page"]
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                yield DevTools(socket)
    finally:
        process.terminate()
        await process.wait()
        if drain is not None:
            await drain


def _filterable_rows(page: str) -> list[str]:
    """The text of every row the filter acts on, as a browser reads it."""
    return [html.unescape(re.sub(r"<[^>]+>", "", row)).lower() for row in re.findall(r'<tr class="f[ "].*?</tr>', page)]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium): the HTML "
                                             "report of a 1,000-node run is checked in a real browser")
async def test_the_html_of_a_thousand_nodes_in_twelve_scenarios_opens_in_chromium_and_filters(tmp_path: Path) -> None:
    run = fleet_run(1000)
    path = tmp_path / "r.html"
    report.write_html(run, path)
    assert path.stat().st_size < 5_000_000
    page = path.read_text()
    rows = _filterable_rows(page)
    query = "127.10.0.997"  # a failing node (no other node's name contains it)
    wanted = sum(query in row for row in rows)
    assert 0 < wanted < len(rows)
    async with asyncio.timeout(BROWSER_DEADLINE_S), _browser(tmp_path / "profile") as browser:
        await browser.open(path.as_uri())
        visible = "[...document.querySelectorAll('tr.f')].filter(r => r.getClientRects().length > 0).length"
        assert await browser.evaluate("document.querySelectorAll('h2[id]').length") == 12
        assert await browser.evaluate("document.querySelectorAll('tr.f').length") == len(rows)
        assert await browser.evaluate(visible) == len(rows)  # nothing typed: every row
        assert "FAILED" in await browser.evaluate("document.querySelector('h1').textContent")
        await browser.evaluate("document.getElementById('filter').focus()")
        await browser.call("Input.insertText", text=query)  # typed, as a person would
        assert await browser.evaluate(visible) == wanted
        assert await browser.evaluate("document.getElementById('shown').textContent") == f"{wanted} of {len(rows)} rows"
        shown = await browser.evaluate("[...document.querySelectorAll('tr.f')].filter(r => r.getClientRects().length"
                                       " > 0).map(r => r.textContent).join('\\n')")
        assert "unreachable: lost the SSH session to 127.10.0.997: SSH connection closed" in shown
        assert "the SSH session to 127.10.0.412" not in shown  # another failing node's own row: hidden
        await browser.evaluate("(b => { b.value = ''; b.dispatchEvent(new Event('input')); })"
                               "(document.getElementById('filter'))")
        assert await browser.evaluate(visible) == len(rows)
