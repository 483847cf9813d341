"""The self-test: `proxyfleet conformance` passes with the reference reconciler and fails, naming
the right check, with every deliberately broken one. A suite that cannot fail is worthless."""

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import trustme

from proxyfleet.harness.cli.conformance import RunOutcome, planned_scenarios
from proxyfleet.harness.conformance.results import CHECK_FAMILIES, ConformanceRun, ScenarioResult
from proxyfleet.harness.lab.assembly import PROXY_HOST, well_known_plan
from proxyfleet.harness.lab.vendor import VendorProxy, VendorProxySettings
from proxyfleet.harness.reconciler import VARIANTS
from proxyfleet.simulators.network import Endpoint
from proxyfleet.simulators.origins.catalog import real_ports_allowed
from tests.harness.cli.commands import marked_processes
from tests.harness.cli.test_vendor_matrix import THREE_SCENARIOS, vendor_options
from tests.harness.cli.test_vendor_matrix import needs as needs_vendor
from tests.support import HANG

# The scenarios that expose broken variants (each is run alone: --scenario).
ADDED = "test_proxy_added_at_runtime"
REMOVED = "test_proxy_then_trusted_ca_removed"
URL_CHANGED = "test_proxy_url_changed_at_runtime"  # to the second proxy, whose credentials are code
ROTATED = "test_proxy_ca_rotated_to_a_new_ca"
RENEWED = "test_proxy_ca_renewed_under_the_same_subject"
DRIFT = "test_out_of_band_changes_are_repaired"
HTTPS_ONLY = "test_an_https_proxy_alone_and_an_untidy_noproxy_are_carried_exactly"
OFF_THE_NETWORK = "test_an_instance_off_the_network_converges_once_back"
HOST_KEY = "test_an_instance_whose_host_key_changed_is_refused"
STUCK = "test_an_instance_that_never_comes_back_keeps_its_slot"
KILLED = "test_the_reconciler_killed_mid_rollout_reboots_no_node_twice"
SECOND_CHANGE = "test_a_second_change_while_the_first_rolls_out_lands"
FAULTS = {OFF_THE_NETWORK, HOST_KEY, STUCK, KILLED, SECOND_CHANGE}

# variant -> (the scenario that exposes it, the check that must name it[, node count]); "a|b":
# either check may name it; "a&b": both must
CATCHES: dict[str, tuple[str, str] | tuple[str, str, int]] = {
    "semicolon-noproxy": (ADDED, "registry-env"),
    "no-reboot": (ADDED, "services-restarted"),
    "early-reachability": (ADDED, "drained-while-down"),
    "no-cert-import": (ADDED, "certificates"),
    "no-cert-removal": (REMOVED, "certificates"),
    "no-env-removal": (REMOVED, "registry-env"),
    "unquoted-values": (URL_CHANGED, "registry-env"),
    "records-whole-bundle": (REMOVED, "certificates"),
    "no-service-wait": (ADDED, "reboots"),
    # the same single look a second late: in a lab whose services started 0.6 s after sshd it passed
    "fixed-service-wait": (ADDED, "reboots"),
    "reboot-without-exit-status": (ADDED, "reboots"),
    "leaks-credentials": (URL_CHANGED, "credentials"),
    "annotates-credentials": (URL_CHANGED, "credentials"),
    "leaves-files": (REMOVED, "files"),
    "ignores-max-unavailable": (ADDED, "disruption-budget"),
    "uncordons-admin-cordon": (ADDED, "disruption-budget"),
    "trusts-import-record": (DRIFT, "certificates"),
    # the variables are wrong, and so is the route: plain-HTTP egress goes through the HTTPS proxy
    "http-from-https": (HTTPS_ONLY, "registry-env&fetch-http"),
    "normalises-noproxy": (HTTPS_ONLY, "registry-env"),
    "removes-by-subject": (RENEWED, "certificates"),
    "no-trusted-ca-restore": (DRIFT, "trusted-ca"),
    "never-retries-unreachable": (OFF_THE_NETWORK, "registry-env"),
    "reboots-again-after-restart": (KILLED, "reboots"),
    # a second reboot for the later change, or, when the step's deadline comes first, stale settings;
    # three nodes: with two, the second one's slot comes as soon as the change is seen, and a restart
    # asked for then may honestly not have seen it yet
    "applies-stale-settings": (SECOND_CHANGE, "reboots|registry-env", 3),
    "ignores-host-keys": (HOST_KEY, "host-key"),
    "no-warning-events": (STUCK, "reported"),  # the Warning Event for the node that never came back
    # the stuck node keeps its slot: taking another in its place overruns the budget (maxUnavailable
    # 2; five nodes: one stuck, one that may finish before the hold, one held in its drain, and two
    # still waiting when the reconciler gives up on the stuck one)
    "frees-stuck-slot": (STUCK, "disruption-budget", 5),
    "skips-drain": (ADDED, "drained"),
    "reboots-while-terminating": (ADDED, "drained"),
    # a budget is only overrun by two drains at once: maxUnavailable 2 needs four nodes
    "deletes-pods": (ADDED, "drained", 4),
}

# The Linux variants (``linuxvariants``), each caught on a mixed fleet (one Windows node, two Linux):
LINUX_CATCHES: dict[str, tuple[str, str]] = {
    # curl ignores upper-case HTTP_PROXY: the plain-HTTP fetch goes direct, into the firewall
    "linux-upper-case-only": (ADDED, "service-environment&fetch-http"),
    "linux-no-daemon-reload": (ADDED, "units-loaded&service-environment"),
    # the anchor is there, the extracted bundle every client reads is not. On RHCOS a reboot extracts it
    # (coreos-update-ca-trust.service), so the proxy's rollout hides the mistake: a CA-only change
    # (a rotation, no reboot) shows it
    "linux-no-update-ca-trust": (ROTATED, "certificates"),
    # the second proxy's percent-encoded credentials: systemd reads each % as a specifier
    "linux-unquoted-environment": (URL_CHANGED, "service-environment"),
    "linux-restarts-runtime-only": (ADDED, "service-environment&services-restarted"),
    "linux-leaves-drop-in": (REMOVED, "files"),
    # the processes hold the proxy (service-environment passes); the units' files do not: lost at a reboot
    "linux-set-environment": (ADDED, "unit-environment"),
}
# Reconcilers that differ from the reference and are correct: each must pass a mixed fleet.
ALSO_CORRECT = {"linux-live-apply"}  # applies Linux changes live (the CAPI way) instead of rebooting


# Variants whose mistake is an *action* during the rollout (a second reboot, an uncordon, two drains at
# once, a credential written once the node is done): the judge sees it only if the step lasts until
# the action, so they run with the default step deadline, and the step ends when the fleet converges
# or the reconciler's claims are refuted. A short deadline made the catch depend on the machine's
# speed: on a CI machine half as fast, `reboot-without-exit-status` and `uncordons-admin-cordon` were
# cut off before their mistake and failed only other checks. The rest are a standing *state* (a
# wrong value, a missing certificate, a file left behind) that any deadline sees: 5 s.
ROLLOUT_ACTIONS = frozenset({
    "early-reachability", "no-service-wait", "fixed-service-wait", "reboot-without-exit-status", "leaks-credentials",
    "annotates-credentials",
    "ignores-max-unavailable", "uncordons-admin-cordon", "reboots-again-after-restart", "applies-stale-settings",
    "ignores-host-keys", "no-warning-events", "frees-stuck-slot", "skips-drain", "reboots-while-terminating", "deletes-pods",
})


def conformance(tmp_path: Path, *args: str, hang: float = 600) -> tuple[subprocess.CompletedProcess[str],
                                                                       dict[str, object]]:
    """One ``proxyfleet conformance`` run; ``hang``: when it is taken to hang (never a verdict: a run
    of every workflow beside a loaded CI suite took over 600 s)."""
    report = tmp_path / "r.json"
    # A wide console: the summary table names each scenario's first failed check unwrapped
    # (a narrow one wraps "disruption-budget" across two lines).
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--json", str(report), *args],
                            capture_output=True, text=True, timeout=hang, cwd=tmp_path,
                            env={**os.environ, "COLUMNS": "200"})
    assert report.exists(), result.stderr[-3000:]
    return result, json.loads(report.read_text())


def check_names(check: str) -> list[str]:
    """The checks a catch names, in order: ``a|b`` (either may), ``a&b`` (both must)."""
    return check.replace("&", "|").split("|")


def uncaught(result: subprocess.CompletedProcess[str], report: dict[str, object], check: str) -> str:
    """Why a broken variant passed, for the failure message: the summary and, from the JSON report,
    what each step saw for the check(s) that should have named it (the run's files are gone by the
    time anyone reads a CI log)."""
    names = set(check_names(check))
    seen = [{"step": c.get("step"), "status": c.get("status"), "observed": c.get("observed"), "nodes": c.get("nodes")}
            for s in report.get("scenarios") or [] for c in s.get("checks") or []  # type: ignore[attr-defined]
            if c.get("check") in names]
    return result.stderr[-2000:] + "\n" + json.dumps(seen, indent=1)[:4000]


@pytest.mark.parametrize(("pytest_code", "scenario_status", "code", "word"), [
    (pytest.ExitCode.OK, "passed", 0, "PASSED"),
    (pytest.ExitCode.TESTS_FAILED, "failed", 1, "FAILED"),
    (pytest.ExitCode.INTERRUPTED, "passed", 130, "INTERRUPTED"),  # what finished passed: still no pass
    (pytest.ExitCode.INTERNAL_ERROR, "passed", 1, "FAILED"),
])
def test_the_commands_exit_code_and_verdict(tmp_path: Path, pytest_code: int, scenario_status: str, code: int,
                                            word: str) -> None:
    run = ConformanceRun(nodes=2, variant="correct", scenarios=[
        ScenarioResult("test_proxy_added_at_runtime", "runtime-add", scenario_status)])
    outcome = RunOutcome(run, int(pytest_code), tmp_path)
    assert outcome.exit_code == code and word in outcome.verdict()


def test_every_broken_variant_has_a_catch() -> None:
    assert set(CATCHES) | set(LINUX_CATCHES) == set(VARIANTS) - {"correct"} - ALSO_CORRECT
    assert not set(CATCHES) & set(LINUX_CATCHES)
    assert ROLLOUT_ACTIONS.issubset(CATCHES)
    scenarios = set(planned_scenarios((), linux_nodes=1))
    assert {scenario for scenario, *_ in [*CATCHES.values(), *LINUX_CATCHES.values()]} <= scenarios
    assert set(planned_scenarios(("faults",))) >= FAULTS


@pytest.mark.slow
def test_the_reference_reconciler_passes_every_workflow_on_ten_nodes(tmp_path: Path) -> None:
    # a mixed fleet, five Windows nodes and five Linux ones (the main job runs ten Windows nodes):
    # every workflow on both kinds, every check family of either seen
    result, report = conformance(tmp_path, "--nodes", "5", "--linux-nodes", "5", "--junit", "r.xml",
                                 "--html", "r.html", hang=2400)
    assert result.returncode == 0, result.stderr[-5000:]
    # the twenty-two lab scenarios and the CAPI machines' install-time (a run with Linux nodes only)
    assert report["summary"] == {"passed": 23, "failed": 0, "skipped": 0, "inconclusive": 0}
    scenarios = report["scenarios"]
    assert isinstance(scenarios, list)
    assert {s["workflow"] for s in scenarios} == {"install-time", "runtime-add", "change", "remove", "baseline",
                                                  "join-after-change", "deconfigure", "drift",
                                                  "proxy-shapes", "faults"}
    for scenario in scenarios:
        checks = scenario["checks"]
        assert checks and all(c["status"] == "passed" or (c["status"] == "skipped" and "off the network"
                                                          in c["observed"]) for c in checks)
        assert len({n for c in checks for n in c["nodes"]}) == 10  # every node judged (grouped records)
    seen = {c["check"] for s in scenarios for c in s["checks"]}
    assert seen == set(CHECK_FAMILIES) - {"destinations"}  # that one only with repro --destination
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and int(suite.get("tests", "0")) > 50
    assert "PASSED" in (tmp_path / "r.html").read_text()
    assert "PASSED" in result.stderr
    assert "closest to a deadline: test_" in " ".join(result.stderr.split())  # its step, under the table
    assert report["nodes"] == 10 and report["linux_nodes"] == 5
    print(f"10-node mixed conformance run: {report['duration_s']} s")


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(ALSO_CORRECT))
def test_a_reconciler_that_differs_from_the_reference_and_is_correct_passes(tmp_path: Path, variant: str) -> None:
    result, report = conformance(tmp_path, "--nodes", "1", "--linux-nodes", "2", "--workflow", "runtime-add",
                                 "--workflow", "remove", "--variant", variant)
    assert result.returncode == 0, result.stderr[-3000:]
    # it applied the Linux nodes' proxy live, with no reboot, and the judge asked for none
    linux = {n for s in report["scenarios"] for c in s["checks"] if c["check"] == "units-loaded"  # type: ignore[union-attr]
             for n in c["nodes"]}  # a Linux-only check: the Linux nodes
    assert len(linux) == 2
    rebooted = {n for s in report["scenarios"] for c in s["checks"] if c["check"] == "reboots"  # type: ignore[union-attr]
                and c["observed"] != "0" for n in c["nodes"]}
    assert not rebooted & linux, rebooted


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "failing"), [("correct", set()),
                                                  ("linux-no-update-ca-trust", {"certificates", "pull-internet"})])
def test_debian_workers_are_judged_like_rhcos_ones(tmp_path: Path, variant: str, failing: set[str]) -> None:
    """``--linux-flavour debian``: containerd, Debian's trust store and update-ca-certificates; the
    reference passes (the install-time workflow's CAPI machines too), a forgotten
    update-ca-certificates is caught as on RHCOS."""
    result, report = conformance(tmp_path, "--nodes", "1", "--linux-nodes", "2", "--linux-flavour", "debian",
                                 "--workflow", "runtime-add", "--workflow", "install-time", "--variant", variant,
                                 *(["--converge-timeout", "5"] if failing else []))
    assert result.returncode == (1 if failing else 0), result.stderr[-3000:]
    assert report["linux_flavour"] == "debian"
    assert ConformanceRun.from_json(report).fleet == "3 node(s) (2 Linux, debian)"
    names = {s["name"] for s in report["scenarios"]}  # type: ignore[index]
    assert "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data" in names
    failed = {c["check"] for s in report["scenarios"] for c in s["checks"] if c["status"] == "failed"}  # type: ignore[union-attr]
    assert failing <= failed and (failed or not failing), failed


def catch(variant: str) -> tuple[str, str, list[str]]:
    """The scenario that exposes a broken variant, the check(s) that must name it, and its fleet."""
    if variant in LINUX_CATCHES:
        scenario, check = LINUX_CATCHES[variant]
        return scenario, check, ["--nodes", "1", "--linux-nodes", "2"]
    scenario, check, *count = CATCHES[variant]
    return scenario, check, ["--nodes", str(count[0] if count else 2)]


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(CATCHES) + sorted(LINUX_CATCHES))
def test_a_broken_reconciler_fails_with_the_right_check_named(tmp_path: Path, variant: str) -> None:
    scenario, check, fleet = catch(variant)
    deadline = [] if variant in ROLLOUT_ACTIONS else ["--converge-timeout", "5"]
    result, report = conformance(tmp_path, *fleet, "--scenario", scenario, "--variant", variant, *deadline)
    assert result.returncode == 1, uncaught(result, report, check)
    summary = report["summary"]
    assert isinstance(summary, dict) and summary["failed"] >= 1
    failed = {c["check"] for s in report["scenarios"] for c in s["checks"] if c["status"] == "failed"}  # type: ignore[union-attr]
    if "&" in check:
        assert set(check.split("&")) <= failed, failed
    named = [c for c in check_names(check) if c in failed]
    # a scenario that broke says why (a later step that would have named the check never ran)
    assert named, (failed, [s.get("error") for s in report["scenarios"] if s.get("error")])  # type: ignore[union-attr]
    assert named[0] in result.stderr  # the summary table names it too
    assert "FAILED" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "passes"), [("correct", True), ("no-cert-import", False)])
def test_an_external_reconciler_is_judged_the_same_way(tmp_path: Path, variant: str, passes: bool) -> None:
    command = (f"{sys.executable} -m proxyfleet.harness reconcile --kubeconfig {{kubeconfig}} --ssh-port {{ssh_port}} "
               f"--max-unavailable {{max_unavailable}} --variant {variant} --service-poll-seconds 0.2 --drain-retry-seconds 0.2")
    # A correct run ends each step once converged; only a broken one waits (its claims are refuted first).
    result, report = conformance(tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--converge-timeout",
                                 "600" if passes else "8", "--reconciler-command", command)
    assert report["variant"] == "external"
    assert (result.returncode == 0) is passes, result.stderr[-3000:]
    failed = {c["check"] for s in report["scenarios"] for c in s["checks"] if c["status"] == "failed"}  # type: ignore[union-attr]
    assert failed == set() if passes else "certificates" in failed
    # ours, so its event loop's lag is measured and shown per step beside the lab's (never counted for it):
    # from the step in which the process began measuring (a busy machine may start it after the first
    # step has ended) to the last
    for scenario in report["scenarios"]:  # type: ignore[union-attr]
        lags = [s["lag_s"] for s in scenario["timeline"]]
        shown = ["reconciler (external)" in lag for lag in lags]
        assert shown and shown[-1] and shown == sorted(shown), lags


def test_a_shard_left_empty_or_of_a_cluster_is_one_error_before_any_lab(tmp_path: Path) -> None:
    empty = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--workflow", "runtime-add",
                            "--shard", "2/2"], capture_output=True, text=True, timeout=HANG, cwd=tmp_path)
    assert empty.returncode == 2 and "2 parts of 1 selected scenario(s) leave this one empty" in empty.stderr
    assert "Traceback" not in empty.stderr and "INTERNALERROR" not in empty.stderr
    (tmp_path / "k").write_text("x")
    cluster = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--kubeconfig", "k",
                              "--ssh-key", "k", "--proxy-url", "http://p:3128", "--shard", "1/2"],
                             capture_output=True, text=True, timeout=HANG, cwd=tmp_path)
    assert cluster.returncode == 2 and "--shard: only on the lab" in cluster.stderr
    linux = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--kubeconfig", "k",
                            "--ssh-key", "k", "--proxy-url", "http://p:3128", "--linux-nodes", "2"],
                           capture_output=True, text=True, timeout=HANG, cwd=tmp_path)
    assert linux.returncode == 2 and "--linux-nodes: only on the lab" in linux.stderr
    named = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--kubeconfig", "k",
                            "--ssh-key", "k", "--proxy-url", "http://p:3128", "--scenario", "test_proxy_added_at_runtime"],
                           capture_output=True, text=True, timeout=HANG, cwd=tmp_path)
    assert named.returncode == 2 and "--scenario: only on the lab" in named.stderr


def test_a_scenario_named_wrongly_or_outside_the_workflows_is_one_error_before_any_lab(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", *args],
                              capture_output=True, text=True, timeout=HANG, cwd=tmp_path, env={**os.environ, "COLUMNS": "400"})

    unknown = run("--scenario", "test_proxy_added_at_runtime", "--scenario", "test_nope")
    assert unknown.returncode == 2 and "no scenario named test_nope (the scenarios: " in unknown.stderr
    assert "test_proxy_then_trusted_ca_removed" in unknown.stderr  # the list to choose from
    outside = run("--workflow", "remove", "--scenario", "test_proxy_added_at_runtime")
    assert outside.returncode == 2
    assert "not in this run's selection: test_proxy_added_at_runtime (workflow runtime-add)" in outside.stderr
    capi = run("--scenario", "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data")
    assert capi.returncode == 2 and "Linux nodes only" in capi.stderr
    for result in (unknown, outside, capi):
        assert "Traceback" not in result.stderr and "INTERNALERROR" not in result.stderr


@pytest.mark.slow
def test_shards_run_side_by_side_and_merge_into_the_whole_run(tmp_path: Path) -> None:
    """Two machines' parts (--shard 1/2, 2/2) of the same selection: each scenario in exactly one
    part, and report merge makes them the run they are parts of."""
    reports = []
    for index in (1, 2):
        part = tmp_path / f"part-{index}"
        part.mkdir()
        result, report = conformance(part, "--nodes", "2", "--workflow", "runtime-add", "--workflow", "remove",
                                     "--shard", f"{index}/2")
        assert result.returncode == 0, result.stderr[-3000:]
        assert report["shards"] == [{"index": index, "total": 2}] and len(report["scenarios"]) == 1  # type: ignore[arg-type]
        reports.append(part / "r.json")
    merged = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "report", "merge", *map(str, reports),
                             "--json", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=HANG)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    data = json.loads((tmp_path / "m.json").read_text())
    assert sorted(s["name"] for s in data["scenarios"]) == ["test_proxy_added_at_runtime",
                                                          "test_proxy_then_trusted_ca_removed"]
    assert data["summary"] == {"passed": 2, "failed": 0, "skipped": 0, "inconclusive": 0}


@pytest.mark.slow
def test_an_external_reconciler_declares_its_reboot_timeout_and_the_judge_waits_that_long(tmp_path: Path) -> None:
    """--reconciler-reboot-timeout is what the judge waits for a stuck node's report (plus a
    margin), and ``{reboot_timeout}`` hands the same value to the reconciler's command: an
    operator started with 5 s passes the stuck node's scenario in about a minute instead of the real
    operator's ten. ``{resync_period}`` hands over --reconciler-resync-period the same way."""
    command = (f"{sys.executable} -m proxyfleet.harness reconcile --kubeconfig {{kubeconfig}} --ssh-port {{ssh_port}} "
               f"--max-unavailable {{max_unavailable}} --reboot-timeout {{reboot_timeout}} "
               f"--resync-seconds {{resync_period}} --service-poll-seconds 0.2 --drain-retry-seconds 0.2")
    labs = tmp_path / "labs"
    result, report = conformance(tmp_path, "--nodes", "5", "--scenario", STUCK, "--reconciler-command", command,
                                 "--reconciler-reboot-timeout", "5", "--reconciler-resync-period", "7",
                                 "--keep", str(labs))
    assert result.returncode == 0, result.stderr[-3000:]
    notes = [t.get("note", "") for s in report["scenarios"] for t in s["timeline"]]  # type: ignore[union-attr]
    assert any("reboot timeout (5 s) and a margin" in n for n in notes), notes
    reported = [c for s in report["scenarios"] for c in s["checks"] if c["check"] == "reported"]  # type: ignore[union-attr]
    assert reported and all(c["status"] == "passed" for c in reported)
    logs = [p.read_text() for p in labs.rglob("reconciler.log")]
    assert logs and all("reboot timeout 5 s, resync every 7 s" in log for log in logs)  # the placeholders filled in


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["semicolon-noproxy", "no-cert-import"])
def test_a_reconciler_claiming_a_node_it_did_not_configure_ends_the_step_early(tmp_path: Path, variant: str) -> None:
    # A deadline the run would never reach if it waited: the step ends on the refuted claim instead.
    result, report = conformance(tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--variant", variant,
                                 "--converge-timeout", "900")
    assert result.returncode == 1, result.stderr[-3000:]
    converged = [c for s in report["scenarios"] for c in s["checks"]  # type: ignore[union-attr]
                 if c["check"] == "converged" and c["status"] == "failed"]
    assert sum(len(c["nodes"]) for c in converged) >= 2, converged
    assert all("ended without waiting for the deadline" in c["observed"] for c in converged), converged


# --- a vendor's proxy: Debian's Squid as a plain process ----------------------------------------

EXAMPLES = Path(__file__).parents[3] / "examples" / "squid"
SQUID = shutil.which("squid") or ("/usr/sbin/squid" if Path("/usr/sbin/squid").exists() else None)
CERTGEN = Path("/usr/lib/squid/security_file_certgen")
needs_real_ports = pytest.mark.skipif(not real_ports_allowed(), reason="origins on ports 80/443 need root, or "
                                      "net.ipv4.ip_unprivileged_port_start=0")
needs_squid = pytest.mark.skipif(SQUID is None or not real_ports_allowed(),
                                 reason="needs Squid (apt-get install squid-openssl) and ports 80/443 "
                                        "(root, or net.ipv4.ip_unprivileged_port_start=0)")


def _squid_bumps() -> bool:
    if SQUID is None or not CERTGEN.exists():
        return False
    version = subprocess.run([SQUID, "-v"], capture_output=True, text=True, check=False).stdout
    return "--with-openssl" in version


def squid(tmp_path: Path, mode: str, password: str = "s3cret", config: Path | None = None,
          image: str | None = None) -> list[str]:
    """``proxyfleet conformance`` options running Squid in ``mode`` (tunnel, https — a tunnel
    whose httpsProxy is its TLS listener —, ssl-bump or basic-auth), as a process of this
    machine's Squid or in a container of ``image``."""
    user = ["--proxy-user", "proxy"] if os.geteuid() == 0 else []  # Squid will not run as root
    name = {"tunnel": "squid.conf", "https": "squid-https.conf", "ssl-bump": "squid-ssl-bump.conf",
            "basic-auth": "squid-basic-auth.conf"}[mode]
    command = f"{'squid' if image else SQUID} -N -n {{instance}} -f {{config_dir}}/{name}"
    options = ["--proxy-config", str(config or EXAMPLES / name), *user, *(["--proxy-image", image] if image else [])]
    if mode == "https":
        options += ["--proxy-tls-port", "3129"]
    if mode == "ssl-bump":
        command = f"sh -c '{CERTGEN} -c -s {{config_dir}}/ssl_db -M 4MB && exec {command}'"
        ca = trustme.CA(organization_name="acme intercepting proxy", key_type=trustme.KeyType.RSA)
        secrets = tmp_path / "vendor-secrets"
        secrets.mkdir()
        (secrets / "proxy-ca-key.pem").write_bytes(ca.cert_pem.bytes() + ca.private_key_pem.bytes())
        (tmp_path / "proxy-ca.crt").write_bytes(ca.cert_pem.bytes())
        options += ["--proxy-config", str(secrets), "--proxy-ca", str(tmp_path / "proxy-ca.crt")]
    if mode == "basic-auth":
        hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input="s3cret", capture_output=True,
                                text=True, check=True).stdout.strip()  # the password on stdin, not argv
        (tmp_path / "passwd").write_text(f"vendor:{hashed}\n")
        (tmp_path / "auth").write_text(f"vendor:{password}\n")
        options += ["--proxy-config", str(tmp_path / "passwd"), "--proxy-auth-file", str(tmp_path / "auth")]
    return ["--proxy-command", command, *options]


MODES = [("tunnel", "tunnelled, origin certificate"), ("basic-auth", "tunnelled, origin certificate"),
         ("ssl-bump", "MITM certificate trusted")]


def observed(report: dict[str, object], check: str) -> list[str]:
    return [c["observed"] for s in report["scenarios"] for c in s["checks"]  # type: ignore[union-attr]
            if c["check"] == check]


def errors(report: dict[str, Any]) -> str:
    """What broke scenarios outside their checks (a lab that did not start: why, in full)."""
    return "".join(f"\n{s['name']}: {s['error'][-3000:]}" for s in report["scenarios"] if s.get("error"))


def _runs_through(tmp_path: Path, mode: str, route: str, image: str | None) -> None:
    result, report = conformance(tmp_path, "--nodes", "2", *THREE_SCENARIOS,
                                 "--keep", str(tmp_path / "labs"), *squid(tmp_path, mode, image=image))
    assert result.returncode == 0, result.stderr[-4000:] + errors(report)
    assert report["summary"] == {"passed": 3, "failed": 0, "skipped": 0, "inconclusive": 0}
    # Judged from the nodes' own records, the origins' logs and the certificate each node was shown
    # (Squid's log only adds what it says):
    assert f"through the proxy, {route}" in observed(report, "pull-internet")
    logs = list((tmp_path / "labs").glob("*/proxy/access.log"))
    assert len(logs) == 3 and all(" CONNECT quay.io:443 " in log.read_text() for log in logs)
    assert "s3cret" not in result.stderr + json.dumps(report)


@needs_squid
@pytest.mark.slow
@pytest.mark.parametrize(("mode", "route"), MODES)
def test_squid_as_a_process_passes_runtime_add_and_change(tmp_path: Path, mode: str, route: str) -> None:
    if mode == "ssl-bump" and not _squid_bumps():
        pytest.skip("this Squid cannot bump TLS (Debian's squid-openssl can)")
    _runs_through(tmp_path, mode, route, image=None)


@needs_real_ports
@pytest.mark.slow
# through the container, the tunnel runs over TLS to the proxy (an https:// httpsProxy) as well
@pytest.mark.parametrize(("mode", "route"), [("https", "tunnelled, origin certificate"), *MODES[1:]])
def test_squid_in_a_container_passes_runtime_add_and_change(tmp_path: Path, squid_image: str, mode: str,
                                                             route: str) -> None:
    _runs_through(tmp_path, mode, route, image=squid_image)
    assert not leftover_containers()  # removed at the end of every lab


@needs_squid
@pytest.mark.slow
def test_squid_over_tls_is_the_clusters_https_proxy(tmp_path: Path) -> None:
    """An https:// proxy URL: httpsProxy reaches Squid's TLS listener (its certificate from the
    lab's proxy server CA, in the bundle), httpProxy its plain one, as OpenShift allows."""
    options = squid(tmp_path, "https")
    result, report = conformance(tmp_path, "--nodes", "2", *THREE_SCENARIOS,
                                 *options)
    assert result.returncode == 0, result.stderr[-4000:]
    assert report["summary"] == {"passed": 3, "failed": 0, "skipped": 0, "inconclusive": 0}
    assert any("HTTP_PROXY='http://proxy.corp.internal:3128', HTTPS_PROXY='https://proxy.corp.internal:3129'" in o
               for o in observed(report, "registry-env"))
    assert "through the proxy, tunnelled, origin certificate" in observed(report, "pull-internet")
    # The nodes verify the proxy's own certificate against what the reconciler gave them: without
    # the bundle imported, TLS to the proxy fails before any CONNECT.
    (tmp_path / "broken").mkdir()
    result, report = conformance(tmp_path / "broken", "--nodes", "2", "--workflow", "runtime-add", "--variant",
                                 "no-cert-import", "--converge-timeout", "5", *options)
    assert result.returncode == 1
    assert any("proxyconnect tcp: tls: failed to verify certificate: x509: certificate signed by unknown "
               "authority" in o for o in observed(report, "pull-internet")), observed(report, "pull-internet")


@needs_squid
@pytest.mark.slow
def test_a_wrong_proxy_password_is_reported_as_such(tmp_path: Path) -> None:
    result, report = conformance(tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--converge-timeout", "60",
                                 *squid(tmp_path, "basic-auth", password="not-the-password"))
    assert result.returncode == 1
    failed = observed(report, "pull-internet")
    assert any("the proxy answered 407: it refused the credentials the node sent" in o and "(TCP_DENIED)" in o
               for o in failed), failed  # the node's record says why; Squid's log adds its code
    assert "not-the-password" not in result.stderr + json.dumps(report)


@pytest.mark.slow
# Squid checks the password with a helper it starts; Apache httpd (examples/apache) in its own
# worker processes, started in a mount namespace of their own (--proxy-etc-hosts)
@pytest.mark.parametrize("proxy", [pytest.param("squid", marks=needs_squid), "apache"])
def test_no_proxy_password_is_on_any_command_line_while_the_run_lasts(tmp_path: Path, proxy: str) -> None:
    options = squid(tmp_path, "basic-auth") if proxy == "squid" else vendor_options(tmp_path, needs_vendor(proxy))
    token = uuid.uuid4().hex
    report = tmp_path / "r.json"
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "conformance", "--json", str(report),
                                "--nodes", "2", "--workflow", "runtime-add", *options],
                               env={**os.environ, "PROXYFLEET_TEST_RUN": token}, cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, str] = {}
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        seen.update(marked_processes(f"PROXYFLEET_TEST_RUN={token}"))  # every process of the run, the proxy's too
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.02)  # the next sample, unless the run has ended
    process.wait(timeout=HANG)
    assert process.returncode == 0 and json.loads(report.read_text())["summary"]["passed"] == 1
    assert any({"squid": "squid", "apache": "apache2"}[proxy] in line for line in seen.values())
    assert any("proxyfleet.harness conformance" in line for line in seen.values())
    assert not [line for line in seen.values() if "s3cret" in line]


@needs_squid
@pytest.mark.slow
def test_a_destination_the_proxy_refuses_is_reported_for_that_destination(tmp_path: Path) -> None:
    config = tmp_path / "squid.conf"
    config.write_text((EXAMPLES / "squid.conf").read_text().replace(
        "http_access allow all", "acl blocked dstdomain ctldl.windowsupdate.com\nhttp_access deny blocked\n"
                                 "http_access allow all"))
    result, report = conformance(tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--converge-timeout", "60",
                                 *squid(tmp_path, "tunnel", config=config))
    assert result.returncode == 1
    statuses = {c["check"]: c["status"] for s in report["scenarios"] for c in s["checks"]  # type: ignore[union-attr]
                if c["status"] == "failed"}
    assert set(statuses) == {"fetch-http"}, statuses  # only that destination; quay.io still passes
    assert any("the proxy refused the request for ctldl.windowsupdate.com (403)" in o and "(TCP_DENIED)" in o
               for o in observed(report, "fetch-http")), observed(report, "fetch-http")


# Through a vendor's proxy, every variant whose catch the proxy could change. The faults scenarios'
# (a replaced host key, a node off the network, a reboot that never ends, a change during a reboot,
# a proxy outage) are judged from Warning Events, command counts, reboots and the variables, none of
# which a proxy's kind touches; the lab's own sweep (test_a_broken_reconciler_fails_with_the_right_
# check_named) catches them, and leaving them out here saves over a minute a Python of CI's ninety.
THROUGH_SQUID = sorted(v for v, (scenario, *_) in CATCHES.items() if scenario not in FAULTS)


@needs_squid
@pytest.mark.slow
@pytest.mark.parametrize("variant", THROUGH_SQUID)
def test_a_broken_reconciler_is_caught_through_squid(tmp_path: Path, variant: str) -> None:
    scenario, check, *count = CATCHES[variant]
    deadline = [] if variant in ROLLOUT_ACTIONS else ["--converge-timeout", "5"]  # as in the lab's own sweep
    result, report = conformance(tmp_path, "--nodes", str(count[0] if count else 2), "--scenario", scenario,
                                 "--variant", variant, *deadline, *squid(tmp_path, "tunnel"))
    assert result.returncode == 1, uncaught(result, report, check)
    failed = {c["check"] for s in report["scenarios"] for c in s["checks"] if c["status"] == "failed"}  # type: ignore[union-attr]
    assert any(c in failed for c in check_names(check)), failed


@needs_squid
@pytest.mark.slow
@pytest.mark.usefixtures("well_known_block")  # a --proxy-url lab takes the one well-known block
async def test_a_proxy_already_running_is_used_by_url(tmp_path: Path) -> None:
    # The vendor starts Squid by hand with the lab's well-known hosts file and egress address
    # (`proxyfleet hosts`), with a TLS listener whose certificate for the lab's proxy name comes
    # from the vendor's own CA; here VendorProxy only launches it, outside the run.
    hosts_text, egress = well_known_plan()
    vendor_ca = trustme.CA(organization_name="acme proxy server CA", key_type=trustme.KeyType.RSA)
    leaf = vendor_ca.issue_cert(PROXY_HOST, key_type=trustme.KeyType.RSA)
    (tmp_path / "tls-ca.pem").write_bytes(vendor_ca.cert_pem.bytes())
    running = VendorProxy(VendorProxySettings(
        state_dir=tmp_path / "vendor", listen=Endpoint("127.21.0.1", 3128), egress_address=egress,
        hosts_text=hosts_text, command=f"{SQUID} -N -n {{instance}} -f {{config_dir}}/squid-https.conf",
        config_files=[EXAMPLES / "squid-https.conf"], user="proxy" if os.geteuid() == 0 else None,
        tls_port=3129, tls_key_pem=leaf.private_key_pem.bytes(),
        tls_cert_pem=b"".join(blob.bytes() for blob in leaf.cert_chain_pems)))
    await running.start()
    try:
        assert running.access_log_path is not None
        result, report = await asyncio.to_thread(
            conformance, tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--proxy-url",
            "http://127.21.0.1:3128", "--proxy-access-log", str(running.access_log_path),
            "--proxy-tls-port", "3129", "--proxy-tls-ca", str(tmp_path / "tls-ca.pem"))
    finally:
        await running.stop()
        running.remove()
    assert result.returncode == 0, result.stderr[-4000:]
    assert "running at http://127.21.0.1:3128" in result.stderr
    assert any("HTTPS_PROXY='https://proxy.corp.internal:3129'" in o for o in observed(report, "registry-env"))
    assert "through the proxy, tunnelled, origin certificate" in observed(report, "pull-internet")


# The container run is judged from the same evidence as the process run (Squid's log, the origins'
# logs, the certificates shown), which catches every variant above; through the container, one
# variant per family of proxy-borne checks (each container start copies the image's 300 MB root
# under dockerd's vfs driver: ~35 s a run on two cores).
CONTAINER_VARIANTS = ["no-cert-import", "removes-by-subject", "semicolon-noproxy", "unquoted-values"]


@needs_real_ports
@pytest.mark.slow
@pytest.mark.parametrize("variant", CONTAINER_VARIANTS)
def test_a_broken_reconciler_is_caught_through_squid_in_a_container(tmp_path: Path, squid_image: str,
                                                                     variant: str) -> None:
    scenario, check, *count = CATCHES[variant]
    result, report = conformance(tmp_path, "--nodes", str(count[0] if count else 2), "--scenario", scenario,
                                 "--variant", variant, "--converge-timeout", "5",
                                 *squid(tmp_path, "tunnel", image=squid_image))
    assert result.returncode == 1, result.stderr[-3000:]
    failed = {c["check"] for s in report["scenarios"] for c in s["checks"] if c["status"] == "failed"}  # type: ignore[union-attr]
    assert any(c in failed for c in check_names(check)), failed


def leftover_containers() -> list[str]:
    """Proxy containers of labs whose process has ended (there should be none)."""
    import docker

    from proxyfleet.harness.lab.vendorcontainer import ROLE_LABEL, orphaned

    found = docker.from_env().containers.list(all=True, filters={"label": ROLE_LABEL + "=vendor-proxy"})
    # (another test's containers of another PID namespace are not provably anyone's leftovers)
    return [c.short_id for c in found if orphaned(c.labels or {})]


def test_a_keep_directory_others_can_write_is_refused_before_any_lab_starts(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant a link where the labs' keys and logs would go
    from tests.harness.cli.commands import proxyfleet

    result = proxyfleet("conformance", "--nodes", "1", "--workflow", "baseline", "--keep", str(shared), cwd=tmp_path,
                        timeout=HANG)
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"--keep {shared} is owned by" in result.stderr and "others can write it" in result.stderr
    assert list(shared.iterdir()) == []  # nothing started, nothing written
