"""``proxyfleet conformance``: the scenario suites on the embedded lab, with progress, a summary
table and reports; exit status 0 only if every check passed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

import proxyfleet.scenarios as scenarios
from proxyfleet.core.contract import OPERATOR_REBOOT_TIMEOUT, RECONCILER_RESYNC_PERIOD
from proxyfleet.core.lifecycle import interrupt_on_sigterm
from proxyfleet.core.noproxy import redact_text
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.harness.cli import runfile
from proxyfleet.harness.cli.clusterrun import (
    check_workflows,
    cluster_options,
    cluster_restored,
    named_cluster,
    plan,
    target_from,
    wait_seconds,
    wait_until_restored,
    write_target,
)
from proxyfleet.harness.cli.proxyoptions import PROXY_OPTION_NAMES, proxy_options, proxy_options_from
from proxyfleet.harness.cli.pytestrun import hermetic_environment, run_pytest
from proxyfleet.harness.cli.report import print_headroom
from proxyfleet.harness.cli.runproxy import InstanceAddressError, RunProxy, RunProxySpec, instance_addresses
from proxyfleet.harness.cli.workerfork import forked_workers
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.plugin import (
    PROPERTY,
    runnable_scenarios,
    scenario_name,
    select_named,
    shard_items,
)
from proxyfleet.harness.conformance.report import write_html, write_json, write_junit
from proxyfleet.harness.conformance.results import INTERRUPTED_EXIT, ConformanceRun, ScenarioResult, verdict_of
from proxyfleet.harness.conformance.shards import Shard, ShardError
from proxyfleet.harness.lab.clustername import ClusterNameError
from proxyfleet.harness.lab.external import ENV_MODES
from proxyfleet.harness.lab.vendor import VendorProxyError
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from proxyfleet.harness.reconciler import VARIANTS
from proxyfleet.simulators.linux.noderoot import FLAVOURS as LINUX_FLAVOURS
from proxyfleet.simulators.proxy.runner import ProxyError

WORKFLOWS = ("install-time", "runtime-add", "change", "remove", "baseline", "join-after-change", "deconfigure",
             "drift", "proxy-shapes", "faults")
SCENARIO_DIR = Path(scenarios.__file__).parent
INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"


def default_workers(nodes: int, cpus: int) -> int:
    """Labs to run at once. A small lab spends most of its time waiting for reboots and services,
    so up to four per CPU overlap well (2 cores, 10 nodes, all 22 scenarios, 2026-12-02: 5 labs
    69-77 s, 6 labs 60-63 s, 8 labs 55-58 s, 10 labs 60-62 s); big labs are CPU-bound, and more
    of them at once only stretch every rollout towards its deadline, so the simulated nodes in
    flight stay around 40 per CPU (20 nodes: 2 labs 170 s, 4 labs 106 s, 6 labs 101 s for 13 %
    more CPU), with at least one lab per CPU."""
    return max(2, cpus, min(4 * cpus, 40 * cpus // max(nodes, 1)))


class Collector:
    """Turns pytest's reports (from xdist workers too) into ``ScenarioResult``s, with progress."""

    def __init__(self, run: ConformanceRun, progress: Progress) -> None:
        self.run = run
        self.progress = progress
        self.task = progress.add_task("starting labs", total=None)
        self._outcomes: dict[str, dict[str, Any]] = {}

    def _set_total(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not hasattr(session.config, "workerinput") and session.items:
            self._set_total(len(session.items))

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._set_total(len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self._outcomes.setdefault(report.nodeid, {"status": "passed", "error": "", "duration": 0.0})
        state["duration"] += report.duration
        if report.failed:
            state["status"] = "failed"
            if not state["error"]:
                # What was raised, first (the summary table shows it), then where, from the end of
                # the traceback; its last line is only the raising line's location.
                crash = getattr(report.longrepr, "reprcrash", None)
                headline = f"{crash.message}\n\n" if crash is not None else ""
                state["error"] = headline + str(report.longreprtext)[-4000:]
        elif report.skipped and state["status"] == "passed":
            state["status"] = "skipped"
            longrepr = report.longrepr
            state["error"] = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        for name, value in report.user_properties:
            if name == PROPERTY:
                state["data"] = json.loads(str(value))
        if report.when == "teardown":
            self._finish(report.nodeid, state)

    def _finish(self, nodeid: str, state: dict[str, Any]) -> None:
        data = state.get("data")
        # pytest's outcome is the truth for status and time (a teardown may still fail); the
        # plugin's record says how the body ended. Failed checks speak for themselves; anything
        # else that failed keeps pytest's text as the error.
        scenario = ScenarioResult.from_json(data) if data else ScenarioResult(
            name=nodeid.split("::")[-1], workflow="?", status="failed", ending="error")
        scenario.status = state["status"]
        if scenario.status == "passed" and scenario.inconclusive():
            scenario.status = "inconclusive"  # nothing failed; the lab's starvation left checks unjudged
        scenario.duration_s = state["duration"]
        failed_on_checks = scenario.status == "failed" and scenario.ending == "checks-failed"
        scenario.error = "" if scenario.status in ("passed", "inconclusive") or failed_on_checks else \
            redact_text(state["error"])
        self.run.scenarios.append(scenario)
        failed = len(scenario.failures())
        status = scenario.status
        self.progress.console.print(Text.assemble(
            (f"{status:7}", "green" if status == "passed" else "yellow" if status in ("skipped", "inconclusive")
             else "red"),
            f" {scenario.workflow:18} {scenario.name}" + (f"  ({failed} failed check(s))" if failed else "")))
        self.progress.update(self.task, advance=1, description=f"{len(self.run.scenarios)} scenario(s) done")


def summary_table(run: ConformanceRun) -> Table:
    table = Table(title=f"proxyfleet conformance: {run.fleet}, reconciler {run.variant}, "
                        f"{run.duration_s:.1f}s")
    for column in ("workflow", "scenario", "status", "checks", "failed checks (first)"):
        table.add_column(column, overflow="fold")
    for scenario in sorted(run.scenarios, key=lambda s: WORKFLOWS.index(s.workflow) if s.workflow in WORKFLOWS else 99):
        failures = scenario.failures()
        first = sorted({f.check for f in failures})
        colour = {"passed": "green", "failed": "red", "skipped": "yellow", "inconclusive": "yellow"}[scenario.status]
        error_line = scenario.error.strip().splitlines()[0][:160] if scenario.error.strip() else ""
        detail = ", ".join(first) if first else error_line
        skipped = sum(1 for c in scenario.checks if c.status == "skipped")
        judged = len(scenario.checks) - skipped
        # Text, not markup: names and errors may hold brackets (a parameter id, a URL, node output)
        table.add_row(Text(scenario.workflow), Text(scenario.name), Text(scenario.status, style=colour),
                      f"{judged - len(failures)}/{judged}" + (f" ({skipped} skipped)" if skipped else ""),
                      Text(detail))
    return table


def skipped_summary(run: ConformanceRun) -> list[str]:
    """One line per check family that was skipped somewhere, with why (what evidence it needs)."""
    reasons: dict[str, dict[str, None]] = {}
    for scenario in run.scenarios:
        for check in scenario.checks:
            if check.status == "skipped":
                reasons.setdefault(check.check, {})[check.observed] = None
    # A traffic check's text is its outcome, then why that proves nothing here: the reason is last.
    return [f"skipped {family}: " + "; ".join(dict.fromkeys(w.rsplit("; ", 1)[-1] for w in why))
            for family, why in reasons.items()]


def _collect_flows(state_dir: Path, target: Path) -> int:
    """Concatenate every proxy's mitmproxy dump (the format is a stream of flows)."""
    count = 0
    with target.open("wb") as out:
        for dump in sorted(state_dir.glob("*/proxy*/flows.mitm")):
            out.write(dump.read_bytes())
            count += 1
    return count


@dataclass
class RunOptions:
    """One run of the scenario suites."""

    nodes: int
    linux_nodes: int = 0
    linux_flavour: str = "rhcos"
    variant: str = "correct"
    workflows: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()  # by name (--scenario); empty: every one of the workflows
    reconciler_command: str | None = None
    reconciler_env: str = "none"
    reconciler_reboot_timeout: float = OPERATOR_REBOOT_TIMEOUT
    reconciler_resync_period: float = RECONCILER_RESYNC_PERIOD
    converge_timeout: float | None = None  # None: each step's deadline follows from its rollout
    workers: int = 0
    keep: Path | None = None
    extra_args: list[str] = field(default_factory=list)
    proxy: ProxyOptions = field(default_factory=ProxyOptions)  # a vendor's proxy (bring your own)


@dataclass
class RunOutcome:
    run: ConformanceRun
    pytest_code: int
    state_dir: Path

    @property
    def passed(self) -> bool:
        return self.run.passed and self.pytest_code == 0

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or SIGTERM before every scenario was judged."""
        return self.pytest_code == pytest.ExitCode.INTERRUPTED

    @property
    def exit_code(self) -> int:
        """The command's exit status: 0 passed, 1 failed (or the scenarios did not run), 4 nothing
        failed but the lab's own starvation left something unjudged (``ConformanceRun.exit_code``),
        130 stopped by Ctrl-C or SIGTERM (neither a pass nor a failure)."""
        if self.interrupted:
            return INTERRUPTED_EXIT
        return self.run.exit_code if self.pytest_code in (0, 1) else 1

    def verdict(self) -> str:
        """The run's last line."""
        word = verdict_of(self.exit_code)
        return {"PASSED": "[green]PASSED[/]",
                "INCONCLUSIVE": "[yellow]INCONCLUSIVE[/] (the lab was starved: nothing failed, but something could "
                                "not be judged; run again on a machine less busy)",
                "INTERRUPTED": "[yellow]INTERRUPTED[/] (stopped before it finished: the scenarios above are the "
                               "ones judged to the end; no verdict on the rest)"}.get(word, "[red]FAILED[/]")


def run_scenarios(options: RunOptions, scratch: Path, console: Console, selected: int) -> RunOutcome:
    """Run the scenarios in-process (xdist workers when more than one), collecting results."""
    started = time.monotonic()
    run = ConformanceRun(nodes=options.nodes + options.linux_nodes, linux_nodes=options.linux_nodes,
                         linux_flavour=options.linux_flavour if options.linux_nodes else "",
                         variant="external" if options.reconciler_command else options.variant)
    try:
        state_dir = private_directory(options.keep.resolve() if options.keep else scratch / "labs")
    except NotPrivateError as exc:
        raise click.UsageError(f"--keep {exc}") from None
    ini = scratch / "pytest.ini"
    ini.write_text(INI)
    parallel = options.workers or min(selected, default_workers(options.nodes + options.linux_nodes,
                                                                os.cpu_count() or 1))
    if options.proxy.serial:
        parallel = 1  # one proxy address: one lab at a time
    args = [str(SCENARIO_DIR), "-c", str(ini), "--rootdir", str(SCENARIO_DIR.parent), "-p", "no:cacheprovider",
            "-p", "no:terminal",
            # Scenarios judge with their own checks: no assertion rewriting to parse in every worker,
            # and no forced garbage collections after every scenario to look for unraisable errors.
            "--assert=plain", "-p", "no:unraisableexception",
            # Scenarios differ threefold in length: idle workers take queued ones from busy ones,
            # and the plugin puts the longest first (the run is as long as its tail).
            *(["--dist", "worksteal"] if selected > 1 else []),
            f"--proxyfleet-nodes={options.nodes}", f"--proxyfleet-linux-nodes={options.linux_nodes}",
            f"--proxyfleet-linux-flavour={options.linux_flavour}",
            f"--proxyfleet-variant={options.variant}",
            *([f"--proxyfleet-converge-timeout={options.converge_timeout}"]
              if options.converge_timeout is not None else []),
            f"--proxyfleet-state-dir={state_dir}",
            f"--proxyfleet-reconciler-reboot-timeout={options.reconciler_reboot_timeout}",
            f"--proxyfleet-reconciler-resync-period={options.reconciler_resync_period}",
            *([] if options.keep else ["--proxyfleet-state-is-scratch"]), *options.extra_args]
    if options.proxy.given:
        args.append(f"--proxyfleet-vendor-proxy={options.proxy.write(scratch / 'vendor-proxy.json')}")
    if options.reconciler_command:
        args.append(f"--proxyfleet-reconciler-command={options.reconciler_command}")
        args.append(f"--proxyfleet-reconciler-env={options.reconciler_env}")
    args += [f"--proxyfleet-workflow={workflow}" for workflow in options.workflows]
    args += [f"--proxyfleet-scenario={name}" for name in options.scenarios]
    # Workers forked from a server that has imported what they run (``workerfork``); one scenario runs here.
    workers = forked_workers(parallel) if selected > 1 else contextlib.nullcontext(["-n", "0"])
    with (hermetic_environment(), workers as worker_arguments,
          Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console, transient=True) as progress):
        collector = Collector(run, progress)
        code = run_pytest([*args, *worker_arguments], [collector])
    run.duration_s = time.monotonic() - started
    if code == pytest.ExitCode.INTERRUPTED:
        console.print("[yellow]interrupted (Ctrl-C or SIGTERM) before every scenario was judged[/]")
    elif code not in (0, 1) or not run.scenarios:
        console.print(f"[red]the scenarios did not run (pytest exit code {code})[/]")
    return RunOutcome(run, code, state_dir)


class _Collected:
    """The scenarios a pytest session collected (``every``) and selected (``items``, after the
    plugin's own filtering)."""

    def __init__(self) -> None:
        self.every: list[pytest.Item] = []
        self.items: list[pytest.Item] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.every = runnable_scenarios(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


def planned_scenarios(workflows: tuple[str, ...], named: tuple[str, ...] = (), linux_nodes: int = 0,
                      shard: Shard | None = None, nodes: int = 10) -> list[str]:
    """The scenarios a run of ``workflows`` (all: empty), ``named`` (``--scenario``) and ``shard``
    runs, found before any lab starts — a name that is no scenario, or a part left empty, is a
    usage error here, not a worker's crash; every machine computes the same parts (priced at the
    run's fleet size, ``nodes`` Windows and ``linux_nodes`` Linux)."""
    collected = _Collected()
    with tempfile.TemporaryDirectory(prefix="proxyfleet-plan-") as scratch:
        ini = Path(scratch) / "pytest.ini"
        ini.write_text(INI)
        code = run_pytest([str(SCENARIO_DIR), "-c", str(ini), "--rootdir", str(SCENARIO_DIR.parent), "-p",
                           "no:cacheprovider", "-p", "no:terminal", "--collect-only",
                           f"--proxyfleet-nodes={nodes}", f"--proxyfleet-linux-nodes={linux_nodes}",
                           *(f"--proxyfleet-workflow={w}" for w in workflows)], [collected], workers=False)
    if code != 0 or not collected.items:
        raise click.ClickException(f"the scenarios could not be listed (pytest exit code {code})")
    items = collected.items
    try:
        if named:
            items, _ = select_named(items, named, collected.every)
        return [scenario_name(item) for item in (shard_items(items, shard) if shard else items)]
    except pytest.UsageError as exc:
        raise click.UsageError(f"--scenario: {exc}") from None
    except ShardError as exc:
        raise click.UsageError(str(exc)) from None


def write_reports(outcome: RunOutcome, console: Console, json_path: Path | None, junit: Path | None,
                  html: Path | None, flows: Path | None, exit_code: int | None = None) -> None:
    """Write the reports asked for; ``exit_code`` is the command's where it knows more than the
    run's outcome (a cluster still rolling after its put-back)."""
    outcome.run.command_exit = outcome.exit_code if exit_code is None else exit_code
    for path, writer in ((json_path, write_json), (junit, write_junit), (html, write_html)):
        if path is not None:
            writer(outcome.run, path)
            console.print(f"wrote {path}", markup=False, highlight=False)
    if flows is not None:
        count = _collect_flows(outcome.state_dir, flows)
        console.print(f"wrote {flows} ({count} proxy dump(s)); open with: mitmweb --rfile {flows}",
                      markup=False, highlight=False)


def report_options(function: Any) -> Any:
    """The report options ``conformance`` and ``repro`` share."""
    for option in reversed([
        click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML here."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write the JSON report here."),
        click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML report here."),
        click.option("--flows", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write every proxy flow here (open with mitmweb --rfile)."),
        click.option("--keep", type=click.Path(file_okay=False, path_type=Path),
                     help="Keep every lab's files (kubeconfig, flows, node disks) under this directory."),
        click.option("--converge-timeout", default=None, type=click.FloatRange(1, 86400),
                     help="Seconds every step may take to converge (default: each step's own, from its rollout)."),
    ]):
        function = option(function)
    return function


# --help's headings: what a user sets up together (a test keeps every option under one)
SECTIONS = (
    ("Lab", ("config", "config_from", "nodes", "linux_nodes", "linux_flavour", "workflows", "scenarios", "shard",
             "converge_timeout", "workers", "keep")),
    ("Reconciler under test", ("variant", "reconciler_command", "reconciler_reboot_timeout", "reconciler_resync_period",
                               "reconciler_env")),
    ("Your proxy", PROXY_OPTION_NAMES),
    ("Existing cluster", ("kubeconfig", "target_cluster", "dry_run", "wait_restored", "ssh_key", "ssh_port",
                          "ssh_known_hosts",
                          "instances", "linux_instances", "no_proxy", "second_proxy_url", "internet_image",
                          "intranet_image", "http_url",
                          "proxy_hosts", "proxy_egress", "proxy_upstream_ca")),
    ("Reports and output", ("json_path", "junit", "html", "flows", "help")),
)


def _shard_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Shard | None:
    try:
        return Shard.parse(value) if value else None
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command(cls=runfile.RunFileCommand, sections=SECTIONS, context_settings={"max_content_width": 120})
@runfile.config_option(SECTIONS, expose=True)
@runfile.config_from_option(SECTIONS)
@click.option("--nodes", default=10, show_default=True, type=click.IntRange(1, 2000), help="Windows nodes per lab.")
@click.option("--linux-nodes", default=0, show_default=True, type=click.IntRange(0, 2000),
              help="Linux workers beside them in each lab, in linux-instances: every workflow on a mixed fleet.")
@click.option("--linux-flavour", default="rhcos", show_default=True, type=click.Choice(sorted(LINUX_FLAVOURS)),
              help="The Linux workers' distribution: rhcos (CRI-O, update-ca-trust) or debian (containerd).")
@click.option("--workflow", "workflows", multiple=True, type=click.Choice(WORKFLOWS), metavar="NAME",
              help=f"Only this workflow (repeatable; default: all): {', '.join(WORKFLOWS)}.")
@click.option("--scenario", "scenarios", multiple=True, metavar="NAME",
              help="Only this scenario, by name as reports show it (repeatable; a wrong name lists them).")
@report_options
@click.option("--variant", default="correct", show_default=True, type=click.Choice(sorted(VARIANTS)), metavar="NAME",
              help="The reference reconciler, or a deliberately broken one for self-tests (a wrong name lists them).")
@click.option("--reconciler-command",
              help="Judge this program instead ({kubeconfig}, {ssh_port}, {max_unavailable}, … filled in; see README).")
@click.option("--reconciler-reboot-timeout", type=click.FloatRange(min=1), default=OPERATOR_REBOOT_TIMEOUT,
              show_default=True,
              help="Seconds it waits for a rebooting node before reporting it (the real operator's).")
@click.option("--reconciler-resync-period", type=click.FloatRange(min=1), default=RECONCILER_RESYNC_PERIOD,
              show_default=True,
              help="Seconds between its looks at every node (what repairs drift): drift steps wait that long more.")
@click.option("--reconciler-env", type=click.Choice(ENV_MODES), default="none", show_default=True,
              help="olm: give it the cluster's proxy variables, restarted on change, as OLM does.")
@click.option("--workers", default=0, type=click.IntRange(0, 64),
              help="Scenario labs at once (default: by lab size and CPUs).")
@click.option("--shard", metavar="K/N", callback=_shard_option,
              help="Run only the K-th of N balanced parts of the scenarios (merge: proxyfleet report merge).")
@proxy_options
@cluster_options
@click.pass_context
def conformance(ctx: click.Context, /, config: Path | None, config_from: Path | None, nodes: int, linux_nodes: int,
                linux_flavour: str,
                workflows: tuple[str, ...], scenarios: tuple[str, ...], junit: Path | None, json_path: Path | None,
                html: Path | None, flows: Path | None, variant: str, reconciler_command: str | None,
                reconciler_reboot_timeout: float, reconciler_resync_period: float, reconciler_env: str,
                keep: Path | None,
                converge_timeout: float | None, workers: int, shard: Shard | None, **proxy: Any) -> None:
    """Judge a reconciler by the conformance scenarios, on the lab or an existing cluster."""
    if config is not None and config_from is not None:
        raise click.UsageError("--config and --config-from: give one (a run file, or the report of a run to repeat)")
    effective = runfile.effective_config(ctx, SECTIONS)
    interrupt_on_sigterm()
    console = Console(stderr=True)
    if linux_nodes and proxy.get("kubeconfig") is not None:
        raise click.UsageError("--linux-nodes: only on the lab (on an existing cluster name its Linux workers with "
                               "--linux-instance ADDR=USER)")
    if scenarios and proxy.get("kubeconfig") is not None:
        raise click.UsageError("--scenario: only on the lab (on an existing cluster, choose with --workflow)")
    if shard is not None and proxy.get("kubeconfig") is not None:
        raise click.UsageError("--shard: only on the lab (a cluster's workflows share the cluster: one run at a time)")
    vendor = proxy_options_from(proxy)
    on_cluster = target_from(proxy, vendor)  # refuses cluster options (--dry-run too) without --kubeconfig
    dry_run = bool(proxy.pop("dry_run", False))
    target_cluster: str | None = proxy.pop("target_cluster", None)
    wait = wait_seconds(proxy.pop("wait_restored", None)) if on_cluster is not None else None
    if on_cluster is not None:
        cluster, run_proxy = on_cluster
        check_workflows(workflows)
        name = named_cluster(cluster)
        for line in plan(cluster, workflows, run_proxy, name):
            click.echo(line)
        if dry_run:
            return
        try:
            name.require(target_cluster)
        except ClusterNameError as exc:
            raise click.ClickException(str(exc)) from None
        _conformance_on_cluster(cluster, run_proxy, workflows, converge_timeout,
                                (reconciler_reboot_timeout, reconciler_resync_period), console, effective, wait,
                                (json_path, junit, html))
        return
    if vendor.given:
        try:
            # checked before any lab starts
            console.print(f"corporate proxy: {vendor.spec().describe()}", markup=False, highlight=False)
        except VendorProxyError as exc:
            raise click.UsageError(str(exc)) from None
    planned = planned_scenarios(workflows, scenarios, linux_nodes, shard, nodes)
    if shard is not None:
        console.print(f"shard {shard}: {', '.join(planned)}", markup=False, highlight=False)
    scratch = Path(tempfile.mkdtemp(prefix="proxyfleet-conformance-"))
    try:
        options = RunOptions(nodes=nodes, linux_nodes=linux_nodes, linux_flavour=linux_flavour, variant=variant,
                             workflows=workflows, scenarios=scenarios,
                             reconciler_command=reconciler_command, reconciler_env=reconciler_env,
                             reconciler_reboot_timeout=reconciler_reboot_timeout,
                             reconciler_resync_period=reconciler_resync_period,
                             converge_timeout=converge_timeout, workers=workers, keep=keep, proxy=vendor,
                             extra_args=[f"--proxyfleet-shard={shard}"] if shard else [])
        outcome = run_scenarios(options, scratch, console, selected=len(planned))
        outcome.run.config = effective
        if shard is not None:
            outcome.run.shards = [{"index": shard.index, "total": shard.total}]
            console.print(f"shard {shard}: {len(outcome.run.scenarios)} scenario(s); join the parts' --json reports "
                          "with proxyfleet report merge", markup=False, highlight=False)
        console.print(summary_table(outcome.run))
        print_headroom(console, outcome.run)
        write_reports(outcome, console, json_path, junit, html, flows)
        if keep:
            console.print(f"kept every lab's state under {outcome.state_dir}", markup=False, highlight=False)
        console.print(outcome.verdict())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(outcome.exit_code)


def _conformance_on_cluster(cluster: ClusterTarget, run_proxy: RunProxySpec | None, workflows: tuple[str, ...],
                            converge_timeout: float | None, declared: tuple[float, float], console: Console,
                            effective: dict[str, dict[str, Any]], wait: float | None,
                            reports: tuple[Path | None, Path | None, Path | None]) -> None:
    """The cluster workflows one at a time, with the cluster's objects saved first and put back
    last (and the run's own proxy, if it starts one, running in between). ``declared``: the
    cluster's reconciler's reboot timeout and resync period."""
    scratch = Path(tempfile.mkdtemp(prefix="proxyfleet-cluster-"))
    scratch.chmod(0o700)
    code = 1
    outcome: RunOutcome | None = None

    def report(exit_code: int) -> None:
        assert outcome is not None
        try:
            write_reports(outcome, console, *reports, None, exit_code=exit_code)
        except OSError as exc:  # said, never in place of the run's own outcome
            console.print(Text(f"cannot write the reports: {exc}", style="red"))

    try:
        with contextlib.ExitStack() as stack:
            snapshot = stack.enter_context(cluster_restored(cluster, console))
            if run_proxy is not None:
                try:
                    clients = instance_addresses([*(list(cluster.instances) or snapshot.instance_addresses()),
                                                  *cluster.linux_instances])
                except InstanceAddressError as exc:
                    raise click.ClickException(str(exc)) from None
                run_proxy = dataclasses.replace(run_proxy, allowed_clients=tuple(clients))
                try:
                    started = stack.enter_context(RunProxy(run_proxy, scratch / "run-proxy"))
                except (ProxyError, VendorProxyError) as exc:
                    raise click.ClickException(f"{run_proxy.describe()} did not start: {exc}") from None
                cluster.proxy_ca_pems.extend(started.ca_pems)
                cluster.proxy_flow_log, cluster.proxy_access_log = started.flow_log, started.access_log
                cluster.proxy_listen = run_proxy.authority
                console.print(f"started {run_proxy.describe()}", markup=False, highlight=False)
            options = RunOptions(nodes=len(cluster.instances), variant="the cluster's own", workflows=workflows,
                                 converge_timeout=converge_timeout, reconciler_reboot_timeout=declared[0],
                                 reconciler_resync_period=declared[1], workers=1,
                                 extra_args=[f"--proxyfleet-cluster={write_target(cluster, scratch)}"])
            outcome = run_scenarios(options, scratch, console, selected=1)
            outcome.run.nodes = max((s.nodes for s in outcome.run.scenarios), default=0)
            outcome.run.config = effective
            console.print(summary_table(outcome.run))
            print_headroom(console, outcome.run)
            for line in skipped_summary(outcome.run):
                console.print(line, markup=False, highlight=False)
            code = outcome.exit_code
            report(code)  # now, in case the job is killed during the put-back; again once it is done
        # put back (the stack above): now wait for the nodes too, if asked; exit 3 if they are not back
        outcome.run.put_back = {"waited_s": 0, "still_rolling": []} if wait is None else \
            wait_until_restored(cluster.kubeconfig, cluster.context, snapshot.node_cordons, wait, console)
        if not outcome.run.put_back_lines()[0] and code == 0:
            code = 3
        report(code)
        console.print(outcome.verdict() if code != 3 else
                      "[red]FAILED[/] the checks passed, but the cluster was still rolling after its put-back (exit 3)")
    except click.ClickException as exc:
        if outcome is not None and outcome.run.put_back is None:  # the put-back itself failed: said in the reports
            outcome.run.put_back = {"failed": redact_text(exc.format_message())}
            report(max(code, 1))
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(code)
