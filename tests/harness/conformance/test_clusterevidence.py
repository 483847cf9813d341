"""An existing cluster's evidence: the run's proxy's log when it started one, grouped by node;
no host record ever (each lab-only check is then skipped); traffic judged by that log or by
outcome only."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from proxyfleet.harness.conformance import checks
from proxyfleet.harness.conformance.clusterevidence import ClusterEvidence
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.evidence import ProbedDestination, Step
from proxyfleet.harness.conformance.expectations import Expected
from proxyfleet.harness.conformance.probe import PullResult

PROXY = "http://proxy.corp.example:3128"
IMAGE = ProbedDestination("pull-internet", "quay.io/openshift/windows-test:latest", image=True, internet=True)
PROXIED = Expected({"HTTP_PROXY": PROXY, "HTTPS_PROXY": PROXY, "NO_PROXY": ".corp.example"}, {}, {})
DIRECT = Expected({"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}, {}, {})


def _target(tmp_path: Path, flow_log: Path | None = None, proxy_url: str = PROXY) -> ClusterTarget:
    return ClusterTarget(tmp_path / "kubeconfig", tmp_path / "id", proxy_url, proxy_flow_log=flow_log)


def _step() -> Step:
    return Step("a step", dt.datetime.now(dt.UTC), members=["10.0.0.5"], deconfigured=[], before={})


def _flow(client: str, host: str, when: dt.datetime, kind: str = "connect") -> str:
    return json.dumps({"client": client, "host": host, "kind": kind, "status": 200, "time": when.isoformat()}) + "\n"


def test_without_the_runs_proxy_nothing_is_observed_and_no_host_is_recorded(tmp_path: Path) -> None:
    evidence = ClusterEvidence(_target(tmp_path))
    assert evidence.marks() == {"run-proxy": 0}
    assert evidence.positions() == {} and evidence.listening() is None and evidence.activity("10.0.0.5") is None
    assert not evidence.anyone_down(set())
    found = evidence.read(_step(), evidence.marks())
    assert not found.routes_observed and found.pull_flows == {} and found.origin_sources == {}
    # what only a simulator shows is absent, not empty: the checks that need it are skipped
    assert found.hosts is None and found.origin_routes is None and found.budget_bypasses is None
    assert found.budget is None
    assert evidence.readable_logs() == []


def test_the_runs_own_proxy_log_is_read_by_node_from_the_marks(tmp_path: Path) -> None:
    log = tmp_path / "flows.jsonl"
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    log.write_text(_flow("10.0.0.5", "quay.io", earlier))
    evidence = ClusterEvidence(_target(tmp_path, log))
    step = _step()
    marks = evidence.marks()
    with log.open("a") as out:
        out.write(_flow("10.0.0.5", "registry.corp.example", dt.datetime.now(dt.UTC)))
        out.write("not json\n")
        out.write(_flow("10.0.0.6", "quay.io", dt.datetime.now(dt.UTC)))
    found = evidence.read(step, marks)
    assert found.routes_observed
    assert {a: [f["host"] for _, f in fs] for a, fs in found.pull_flows.items()} == {
        "10.0.0.5": ["registry.corp.example"], "10.0.0.6": ["quay.io"]}
    assert [f["host"] for f in found.step_flows["10.0.0.5"]] == ["registry.corp.example"]  # not the earlier one


def test_traffic_without_a_log_is_judged_by_outcome_only(tmp_path: Path) -> None:
    evidence = ClusterEvidence(_target(tmp_path))
    found = evidence.read(_step(), evidence.marks())
    through = evidence.traffic("10.0.0.5", IMAGE, PROXIED.route(IMAGE.route_url), PullResult(True, "ok"), found)
    assert through.observed_by == "outcome" and not through.network_decides
    verdict = checks.traffic(IMAGE.text, True, PROXIED.route(IMAGE.route_url), through)
    assert verdict.skipped and "not observable" in verdict.observed  # a success proves no route
    failed = evidence.traffic("10.0.0.5", IMAGE, PROXIED.route(IMAGE.route_url), PullResult(False, "x509"), found)
    assert not checks.traffic(IMAGE.text, True, PROXIED.route(IMAGE.route_url), failed).ok
    direct = evidence.traffic("10.0.0.5", IMAGE, DIRECT.route(IMAGE.route_url), PullResult(False, "refused"), found)
    assert direct.network_decides  # an internet destination without a proxy: the network's call


def test_traffic_with_the_runs_proxy_log_sees_the_nodes_flows_to_that_host(tmp_path: Path) -> None:
    log = tmp_path / "flows.jsonl"
    log.write_text("")
    evidence = ClusterEvidence(_target(tmp_path, log))
    marks = evidence.marks()
    now = dt.datetime.now(dt.UTC)
    log.write_text(_flow("10.0.0.5", "quay.io", now) + _flow("10.0.0.5", "other.example", now)
                   + _flow("10.0.0.6", "quay.io", now))
    found = evidence.read(_step(), marks)
    route = PROXIED.route(IMAGE.route_url)
    seen = evidence.traffic("10.0.0.5", IMAGE, route, PullResult(True, "ok"), found)
    assert seen.observed_by == "run-proxy" and seen.through_run_proxy
    assert [f["host"] for _, f in seen.seen.flows] == ["quay.io"]  # this node's, to this host only
    assert checks.traffic(IMAGE.text, True, route, seen).ok
    # the same pull through a proxy that is not the run's: its log cannot show the route
    other = ClusterEvidence(_target(tmp_path, log, proxy_url="http://elsewhere.example:8080"))
    assert not other.traffic("10.0.0.5", IMAGE, route, PullResult(True, "ok"), found).through_run_proxy
    # a direct route with a flow at the run's proxy fails
    direct = evidence.traffic("10.0.0.5", IMAGE, DIRECT.route(IMAGE.route_url), PullResult(True, "ok"), found)
    assert not checks.traffic(IMAGE.text, True, DIRECT.route(IMAGE.route_url), direct).ok


def test_a_vendors_access_log_is_read_in_the_format_the_run_was_given(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    evidence = ClusterEvidence(ClusterTarget(tmp_path / "kubeconfig", tmp_path / "id", PROXY, proxy_access_log=log,
                                             proxy_log_format="combined"))
    marks = evidence.marks()
    # Apache httpd 2.4.71 (Debian), Debian's `combined` LogFormat, as a forward proxy
    log.write_text('10.0.0.5 - - [25/Nov/2026:21:17:27 +0000] "CONNECT quay.io:443 HTTP/1.1" 200 2126 "-" "curl"\n'
                   "1795641499.998 4 10.0.0.6 TCP_TUNNEL/200 2089 CONNECT quay.io:443 - HIER_DIRECT/127.0.0.1 -\n")
    found = evidence.read(_step(), marks)
    assert {a: [(f["host"], f["format"]) for _, f in fs] for a, fs in found.pull_flows.items()} == {
        "10.0.0.5": [("quay.io", "combined")]}  # the Squid line is not in the format given
