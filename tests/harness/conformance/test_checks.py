"""The pure check functions, one per family: (expected, evidence) -> verdict, including
case-insensitive variable names as Windows reads them."""

from __future__ import annotations

import datetime as dt

import pytest
import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.harness.conformance import checks
from proxyfleet.harness.conformance.checks import env_text, proxy_variables, service_environment_problems
from proxyfleet.harness.conformance.expectations import Route

EXPECTED = {"HTTP_PROXY": "http://p:3128", "HTTPS_PROXY": "http://p:3128", "NO_PROXY": ".svc"}


def test_variable_names_compare_the_way_windows_does() -> None:
    lower = {"http_proxy": "http://p:3128", "Https_Proxy": "http://p:3128", "no_proxy": ".svc", "Path": "C:\\"}
    assert proxy_variables(lower) == EXPECTED
    assert service_environment_problems({"containerd": lower, "kubelet": EXPECTED}, EXPECTED) == []


def test_wrong_missing_and_stopped_services_are_named() -> None:
    problems = service_environment_problems(
        {"containerd": {"HTTP_PROXY": "http://p:3128"}, "kubelet": None,
         "kube-proxy": {**EXPECTED, "NO_PROXY": ".svc;.cluster.local"}}, EXPECTED)
    assert problems[0].startswith("containerd: HTTP_PROXY='http://p:3128', HTTPS_PROXY=unset")
    assert problems[1] == "kubelet not running"
    assert "NO_PROXY='.svc;.cluster.local'" in problems[2]


def test_reports_never_show_credentials() -> None:
    assert "pw" not in env_text({"HTTPS_PROXY": "http://u:pw@p:3128", "NO_PROXY": None})


# --- the pure check functions ------------------------------------------------------------------

T0 = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)


def test_services_restart_only_for_a_change() -> None:
    before, after = T0 - dt.timedelta(seconds=5), T0 + dt.timedelta(seconds=5)
    assert checks.services_restarted("environment", {"kubelet": after, "containerd": after}, T0).ok
    stale = checks.services_restarted("environment", {"kubelet": after, "containerd": before}, T0)
    assert not stale.ok and "containerd" in stale.observed
    assert not checks.services_restarted("environment", {"kubelet": None}, T0).ok
    assert checks.services_restarted("none", {"kubelet": before}, T0).ok
    assert not checks.services_restarted("none", {"kubelet": after}, T0).ok


def test_a_trust_bundle_change_may_be_applied_live_or_by_restart() -> None:
    before, after = T0 - dt.timedelta(seconds=5), T0 + dt.timedelta(seconds=5)
    live = checks.services_restarted("live", {"kubelet": before}, T0)
    assert live.ok and "applied live" in live.observed
    assert checks.services_restarted("live", {"kubelet": after}, T0).ok
    assert checks.reboots(0, "live").ok and checks.reboots(1, "live").ok and not checks.reboots(2, "live").ok


def test_a_reboot_overtaken_by_a_second_change_may_be_followed_by_one_more() -> None:
    assert checks.reboots(2, "environment", overtaken=True).ok
    assert not checks.reboots(3, "environment", overtaken=True).ok
    assert not checks.reboots(2, "environment", overtaken=False).ok


def test_certificates_name_what_is_missing_and_extra() -> None:
    verdict = checks.certificates(frozenset({"A" * 40, "B" * 40}), frozenset({"B" * 40, "C" * 40}), 1,
                                  {"A" * 40: "CN=corp"}, {"C" * 40: "CN=old"})
    assert not verdict.ok and "missing CN=corp" in verdict.observed and "unexpected CN=old" in verdict.observed
    assert checks.certificates(frozenset({"A" * 40}), frozenset({"A" * 40}), 1, {}, {}).ok


def test_a_kept_certificate_removed_and_put_back_during_the_step_fails() -> None:
    # A CA renewed under the same name, removed with the one it replaced and re-imported by the next
    # pass: the end state is right, the pulls in between were not.
    verdict = checks.certificates(frozenset({"A" * 40}), frozenset({"A" * 40}), 1, {"A" * 40: "CN=corp 2027"}, {},
                                  removed_while_kept=frozenset({"A" * 40}))
    assert not verdict.ok
    assert verdict.observed == f"removed during the step though the bundle kept it: CN=corp 2027 ({'A' * 12}…)"


def test_node_ready_firewall_and_reboots() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {}}
    assert checks.node_ready(ready, 0, "api-int").ok
    assert "2 API request" in checks.node_ready(ready, 2, "api-int").observed
    assert checks.node_ready({**ready, "spec": {"unschedulable": True}}, 0, "api-int").observed == "Node cordoned"
    assert "not Ready" in checks.node_ready({"status": {}}, 0, "api-int").observed
    assert checks.node_ready(None, 0, "api-int").observed == "no Node object"
    assert checks.firewall([]).ok and not checks.firewall(["internet-registry"]).ok
    assert checks.reboots(1, "environment").ok and not checks.reboots(2, "environment").ok
    assert not checks.reboots(1, "none").ok


def test_drained_uses_exact_edges_and_the_watch() -> None:
    assert checks.drained([]).observed == "no reboot"
    assert checks.drained([checks.OutageEvidence(True, True, True, "cordoned while down")]).ok
    assert "went down" in checks.drained([checks.OutageEvidence(False, True, True, "")]).observed
    assert "came back up" in checks.drained([checks.OutageEvidence(True, False, True, "")]).observed
    # exact edges fine, but the watch saw an uncordon in between
    assert not checks.drained([checks.OutageEvidence(True, True, False, "uncordoned 0.5s before it came back up")]).ok
    # no exact edges (a real cluster): the watch decides
    assert not checks.drained([checks.OutageEvidence(None, None, False, "never cordoned before it came back")]).ok


def test_converged_and_registry_env() -> None:
    assert checks.converged(None, 1.234, 60).observed == "settled after 1.23s"
    assert "still off when the step ended: certificates" in checks.converged("certificates", None, 60).observed
    wanted = {"HTTP_PROXY": "http://u:pw@p:1", "HTTPS_PROXY": None, "NO_PROXY": None}
    verdict = checks.registry_env(wanted, dict(wanted, HTTPS_PROXY="x"))
    assert not verdict.ok and "pw" not in verdict.expected


def test_credentials_are_found_in_every_encoding_and_never_echoed() -> None:
    import base64
    import urllib.parse

    url = "http://o'brien:pa$(x)@proxy2.corp.internal:8080"
    secrets = checks.url_secrets(url)
    assert secrets == {"pa$(x)", "o'brien:pa$(x)"}
    forms = checks.credential_forms(secrets)
    carriers = [
        f"proxy {url}",  # plain
        urllib.parse.quote(url, safe=""),  # percent-encoded
        "Basic " + base64.b64encode(b"o'brien:pa$(x)").decode(),  # a Basic token
        base64.b64encode(url.encode()).decode(),  # Base64 of a longer text (another alignment)
        "x=" + base64.b64encode(url.encode("utf-16-le")).decode(),  # as -EncodedCommand carries it
        base64.urlsafe_b64encode(b"pa$(x)").decode().rstrip("="),
    ]
    for text in carriers:
        assert checks.reveals(text, secrets, forms), text
    for clean in ("http://***:***@proxy2.corp.internal:8080", "proxyfleet-reconciler NodeConfigured", ""):
        assert not checks.reveals(clean, secrets, forms)
    verdict = checks.credentials(["Node win-0001 annotation proxyfleet.io/proxy-config"])
    assert not verdict.ok and "pa$(x)" not in verdict.observed + verdict.expected
    assert checks.credentials([]).ok


def test_urls_without_a_password_carry_no_secret() -> None:
    assert checks.url_secrets("http://proxy:3128") == set()
    assert checks.url_secrets("http://user@proxy:3128") == set()
    assert checks.url_secrets("http://u:%70%77%21@proxy:3128") == {"%70%77%21", "u:%70%77%21", "pw!", "u:pw!"}


def test_leftover_files_are_what_the_node_did_not_have_before() -> None:
    before = frozenset({"C:\\k\\kubelet.exe"})
    assert checks.leftover_files(before, before).ok
    verdict = checks.leftover_files(before | {"C:\\k\\ca-bundle.crt"}, before)
    assert not verdict.ok and "C:\\k\\ca-bundle.crt" in verdict.observed


# --- disruption-budget ---------------------------------------------------------------------------

T0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def span(start: float, end: float) -> tuple[dt.datetime, dt.datetime]:
    return T0 + dt.timedelta(seconds=start), T0 + dt.timedelta(seconds=end)


def test_the_peak_counts_each_node_once_at_the_busiest_moment() -> None:
    peak = checks.peak_unavailable({"a": [span(0, 4), span(1, 2)], "b": [span(3, 5)], "c": [span(6, 7)]})
    assert (peak.count, peak.nodes, peak.at) == (2, frozenset({"a", "b"}), span(3, 3)[0])


def test_back_to_back_outages_do_not_overlap() -> None:
    peak = checks.peak_unavailable({"a": [span(0, 2)], "b": [span(2, 4)]})
    assert peak.count == 1
    assert checks.peak_unavailable({}).count == 0


def test_more_down_than_max_unavailable_fails_every_node_involved() -> None:
    down = checks.peak_unavailable({"a": [span(0, 4)], "b": [span(1, 3)], "c": [span(9, 10)]})
    none = checks.Peak(0, None, frozenset())
    verdict = checks.disruption_budget("a", 1, 3, down, none, None)
    assert not verdict.ok and "2 down at once at 12:00:01.000 (a, b)" in verdict.observed
    assert checks.disruption_budget("c", 1, 3, down, none, None).ok  # not part of that moment
    assert checks.disruption_budget("a", 2, 3, down, none, None).ok


def test_reconciler_cordons_count_against_the_budget_too() -> None:
    cordoned = checks.peak_unavailable({"a": [span(0, 4)], "b": [span(1, 3)]})
    verdict = checks.disruption_budget("b", 1, 2, checks.Peak(0, None, frozenset()), cordoned, None)
    assert not verdict.ok and "2 cordoned by the reconciler at once" in verdict.observed


def test_a_stuck_node_keeps_its_slot_while_others_are_cordoned() -> None:
    """faults: a node stuck in its reboot is down; two others cordoned beside it are within the
    budget of 2 by each count alone, but three down-or-cordoned at once is one too many."""
    down = checks.peak_unavailable({"stuck": [span(0, 10)]})
    cordoned = checks.peak_unavailable({"b": [span(1, 3)], "c": [span(2, 4)]})
    either = checks.peak_unavailable({"stuck": [span(0, 10)], "b": [span(1, 3)], "c": [span(2, 4)]})
    assert checks.disruption_budget("b", 2, 5, down, cordoned, None).ok  # what the two counts alone say
    verdict = checks.disruption_budget("b", 2, 5, down, cordoned, None, either)
    assert not verdict.ok and "3 down or cordoned by the reconciler at once" in verdict.observed
    assert "(b, c, stuck)" in verdict.observed


def test_an_administrators_cordon_must_survive() -> None:
    none = checks.Peak(0, None, frozenset())
    lost = checks.disruption_budget("a", 1, 2, none, none, admin_cordon_kept=False)
    assert not lost.ok and "administrator's cordon was removed" in lost.observed
    assert checks.disruption_budget("a", 1, 2, none, none, admin_cordon_kept=True).ok


def test_a_node_the_administrator_cordoned_is_ready_only_while_cordoned() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    cordoned = {**ready, "spec": {"unschedulable": True}}
    assert checks.node_problem(ready) is None
    assert checks.node_problem(cordoned) == "Node cordoned"
    assert checks.node_problem(cordoned, admin_cordoned=True) is None
    assert "cordon was lost" in str(checks.node_problem(ready, admin_cordoned=True))
    assert checks.node_ready(cordoned, 0, "api-int", admin_cordoned=True).ok


# --- trusted-ca ----------------------------------------------------------------------------------


def test_trusted_ca_must_exist_labelled_and_hold_the_bundle() -> None:
    ca = trustme.CA()
    pem = ca.cert_pem.bytes().decode()
    wanted = frozenset({Certificate.from_pem(ca.cert_pem.bytes()).thumbprint})
    labelled = {"metadata": {"labels": {"config.openshift.io/inject-trusted-cabundle": "true"}},
                "data": {"ca-bundle.crt": pem}}
    assert checks.trusted_ca(labelled, wanted, "ns/trusted-ca").ok
    assert checks.trusted_ca(None, wanted, "ns/trusted-ca").observed == "missing"
    unlabelled = {**labelled, "metadata": {"labels": {}}}
    assert "label" in checks.trusted_ca(unlabelled, wanted, "ns/trusted-ca").observed
    empty = {**labelled, "data": {}}
    assert "1 of the bundle's missing" in checks.trusted_ca(empty, wanted, "ns/trusted-ca").observed
    garbage = {**labelled, "data": {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"}}
    assert not checks.trusted_ca(garbage, wanted, "ns/trusted-ca").ok


def test_a_changed_host_key_must_be_refused_and_reported() -> None:
    reported = ["HostKeyMismatch: the SSH host key of 127.10.0.3 is not the one pinned on first contact"]
    assert checks.host_key_refused(0, reported).ok
    followed = checks.host_key_refused(6, reported)
    assert not followed.ok and "6 command(s) ran" in followed.observed
    silent = checks.host_key_refused(0, ["NodeUnreachable: timed out"])
    assert not silent.ok and "names the host key" in silent.observed


def test_a_node_stuck_in_its_reboot_must_be_reported() -> None:
    assert checks.stuck_reported(False, ["RebootTimeout: 127.10.0.1 did not come back"]).ok
    assert checks.stuck_reported(False, []).observed == "no Warning Event about its Node"
    assert not checks.stuck_reported(True, ["RebootTimeout: …"]).ok


def test_a_reboot_is_overtaken_only_by_a_change_written_during_the_rollout() -> None:
    second = dt.timedelta(seconds=1)
    at = [T0 + dt.timedelta(seconds=s) for s in range(12)]

    def change(issued: int, seen: int | None = None) -> checks.Change:
        return checks.Change(at[issued], at[issued if seen is None else seen])

    # a runtime add writes the bundle and the proxy before any restart is asked for: one change
    assert not checks.overtaken([at[2]], at[2], [change(0), change(1)], second)
    # a second change while node A (restart asked for at 2 s) reboots: A may reboot again
    assert checks.overtaken([at[2]], at[2], [change(0), change(3)], second)
    # node B's restart was asked for 4 s after that change was seen: it had seen it, one reboot only
    assert not checks.overtaken([at[7]], at[2], [change(0), change(3)], second)
    # ... unless the change reached the watches late (a loaded machine): B asked before it could see it
    assert checks.overtaken([at[7]], at[2], [change(0), change(3, seen=7)], second)
    assert not checks.overtaken([at[9]], at[2], [change(0), change(3, seen=7)], second)


def test_without_route_evidence_a_failure_fails_and_a_success_is_only_skipped() -> None:
    via = Route("http://svc:S3cr3t@p:3128", "not in NO_PROXY")
    direct = Route(None, "in NO_PROXY")
    failed = checks.outcome_only("quay.io/a:1", "pull", via, checks.PullEvidence(False, "x\nproxyconnect tcp: 407"),
                                 network_decides=False)
    assert not failed.ok and not failed.skipped
    assert failed.expected == "quay.io/a:1 via http://***:***@p:3128 succeeds" and "407" in failed.observed
    succeeded = checks.outcome_only("quay.io/a:1", "pull", via, checks.PullEvidence(True, "Image is up to date"),
                                    network_decides=False)
    assert succeeded.skipped and succeeded.observed.endswith("the proxy's and the origin's logs are not the run's (only the log of a proxy "
        "the run starts, --proxy-listen, shows a route on an existing cluster)")
    # the intranet, in NO_PROXY: must succeed direct
    assert not checks.outcome_only("r.corp/a:1", "pull", direct, checks.PullEvidence(False, "refused"),
                                   network_decides=False).ok
    # the internet with no proxy for it: the network's to allow or refuse, either way
    for ok in (True, False):
        verdict = checks.outcome_only("quay.io/a:1", "pull", direct, checks.PullEvidence(ok, "…"), network_decides=True)
        assert verdict.skipped and "needs lab evidence" in verdict.observed


def test_a_skipped_verdict_is_neither_pass_nor_fail_and_node_ready_says_what_it_did_not_judge() -> None:
    skipped = checks.Verdict.skip("what it proves", "why not")
    assert skipped.skipped and skipped.observed == "why not"
    assert not checks.Verdict(True, "a", "b").skipped
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {}}
    unjudged = checks.node_ready(ready, None, "api-int")
    assert unjudged.ok and "kubelet traffic not judged" in unjudged.expected
    assert not checks.node_ready({"status": {}}, None, "api-int").ok


def test_at_the_runs_own_proxy_a_route_is_judged_by_what_that_proxy_carried() -> None:
    via = Route("http://proxy.corp.example:3128", "not in NO_PROXY")
    direct = Route(None, "registry.corp.example matches NO_PROXY entry .corp.example")
    carried = ((True, {"kind": "connect", "status": 200, "host": "quay.io"}),
               (True, {"kind": "request", "status": 200, "host": "quay.io", "intercepted": True, "scheme": "https"}))
    good = checks.at_run_proxy("quay.io/a:1", "pull", via, checks.PullEvidence(True, "ok", carried), True, False)
    assert good.ok and good.observed == "through the run's proxy, MITM certificate trusted"
    # succeeded, yet the run's proxy carried nothing: it went some other way
    assert not checks.at_run_proxy("quay.io/a:1", "pull", via, checks.PullEvidence(True, "ok"), True, False).ok
    refused = ((True, {"kind": "connect", "status": 407, "host": "quay.io", "squid_code": "TCP_DENIED"}),)
    denied = checks.at_run_proxy("quay.io/a:1", "pull", via, checks.PullEvidence(False, "407", refused), True, False)
    assert not denied.ok and "the proxy answered 407" in denied.observed
    # direct, as NO_PROXY says: nothing may reach the run's proxy
    wrong = checks.at_run_proxy("r.corp.example/a:1", "pull", direct, checks.PullEvidence(True, "ok", carried),
                                True, False)
    assert not wrong.ok and "though the cluster's NO_PROXY sends it direct" in wrong.observed
    right = checks.at_run_proxy("r.corp.example/a:1", "pull", direct, checks.PullEvidence(True, "ok"), True, False)
    assert right.ok and not right.skipped
    assert checks.at_run_proxy("quay.io/a:1", "pull", direct, checks.PullEvidence(False, "x"), True, True).skipped
    # through a proxy that is not the run's: the outcome only
    assert checks.at_run_proxy("quay.io/a:1", "pull", via, checks.PullEvidence(True, "ok"), False, False).skipped


def test_a_node_gone_unknown_while_the_lab_starved_is_not_judged() -> None:
    unknown = {"metadata": {"name": "win-0"}, "spec": {},
               "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}}
    starved = checks.node_ready(unknown, 0, "api-int.lab", starved=2.5)
    assert starved.inconclusive and not starved.ok
    assert "while the lab's own event loop stalled up to 2.5 s" in starved.observed
    calm = checks.node_ready(unknown, 0, "api-int.lab", starved=0.2)  # the kubelet had its turns: its silence
    assert not calm.ok and not calm.inconclusive
    # a kubelet that sent its requests through a proxy is the reconciler's doing, starved or not
    proxied = checks.node_ready(unknown, 3, "api-int.lab", starved=2.5)
    assert not proxied.ok and not proxied.inconclusive


@pytest.mark.parametrize(("output", "times_out"), [
    ('failed to do request: Head "https://registry.corp.internal/v2/": net/http: TLS handshake timeout', True),
    ("dial tcp registry.corp.internal:443: i/o timeout", True),
    ("curl: (28) Operation timed out", True),
    ("lost the SSH session to 127.10.0.4: no answer within 60 s", True),
    ("x509: certificate signed by unknown authority", False),
    ("proxyconnect tcp: dial tcp 127.20.0.1:3128: connect: connection refused", False),
])
def test_a_traffic_timeout_is_told_from_a_refusal(output: str, times_out: bool) -> None:
    assert bool(checks.TIMED_OUT.search(output)) is times_out


def test_a_pull_that_timed_out_while_the_lab_starved_is_not_judged_and_nothing_else_changes() -> None:
    failed = checks.Verdict(False, "via the proxy", "pull failed (net/http: TLS handshake timeout)")
    starved = checks.starved_traffic(failed, 2.4, 3)
    assert starved.inconclusive and not starved.ok and starved.expected == failed.expected
    assert "stalled 2.4 s (attempt 3," in starved.observed and starved.observed.startswith(failed.observed)
    assert checks.starved_traffic(failed, 0.4, 1) == failed  # the lab ran: a failure is a failure
    passed = checks.Verdict(True, "via the proxy", "through the proxy")
    assert checks.starved_traffic(passed, 5.0, 2) == passed


def test_a_check_failed_on_a_node_the_lab_failed_is_inconclusive_naming_the_fault() -> None:
    failed = checks.Verdict(False, "a readable node", "unreachable: connection refused")
    fault = "the lab failed the node's reboot: NodeCommandStuck('…')"
    assert checks.lab_failed(failed, "") is failed  # the lab failed nothing: judged as it came
    passed = checks.Verdict(True, "a readable node", "read")
    assert checks.lab_failed(passed, fault) is passed  # what passed passed
    judged = checks.lab_failed(failed, fault)
    assert (judged.ok, judged.inconclusive, judged.expected) == (False, True, "a readable node")
    assert judged.observed == f"unreachable: connection refused — {fault}: not judged"
