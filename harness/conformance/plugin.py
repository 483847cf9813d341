"""The proxyfleet pytest plugin (entry point ``pytest11``): the embedded lab and the conformance
judge as fixtures, so a scenario is a few lines::

    @pytest.mark.workflow("runtime-add")
    async def test_my_case(conformance):
        await conformance.step("join", lambda: conformance.add_instances(conformance.every_node))
        ...
        conformance.assert_passed()

Against an existing cluster (``--proxyfleet-cluster FILE``, written by ``proxyfleet conformance
--kubeconfig``) only the scenarios marked ``@pytest.mark.cluster`` run, with the
``cluster_conformance`` fixture; on the lab those are left out.

Options: ``--proxyfleet-nodes``, ``--proxyfleet-linux-nodes``, ``--proxyfleet-variant`` (the built-in reconciler,
or a broken one), ``--proxyfleet-reconciler-command`` (an external reconciler instead),
``--proxyfleet-converge-timeout``, ``--proxyfleet-state-dir`` (keep each lab's files there).
``@pytest.mark.lab(...)`` passes ``LabSettings`` fields to one scenario's lab. Each scenario's checks
travel in the test report's ``user_properties`` under ``proxyfleet`` (JSON), also from xdist workers.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from proxyfleet.core.contract import OPERATOR_REBOOT_TIMEOUT, RECONCILER_RESYNC_PERIOD
from proxyfleet.core.lifecycle import die_with_parent, interrupt_on_sigterm
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.harness.conformance import scenariocosts, shards
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.judge import Conformance
from proxyfleet.harness.conformance.results import ChecksFailed, Ending, ScenarioResult, Status
from proxyfleet.harness.lab import Lab, LabSettings, customer_settings
from proxyfleet.harness.lab.external import ENV_MODES
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from proxyfleet.simulators.origins.destinations import parse_destination

PROPERTY = "proxyfleet"
# How long a step's nodes must look right before it ends. On an existing cluster the judge sees
# only the machines' registry, Root store and service start times and the Nodes: an operator
# finishes a node with a few more writes after its services are up (verifying them, lifting its
# cordon, its own bookkeeping), and a step that ended between them let the next step's action
# hide what they did (an administrator's cordon lifted after the judge had looked). The lab's
# judge sees the cordon timeline and every reboot's edges, so half a second is enough there.
LAB_QUIET = 0.5
CLUSTER_QUIET = 5.0
ENDING = pytest.StashKey[Ending]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember how the scenario's body ended, by exception type (read by the fixture below)."""
    report = yield
    if call.when == "call":
        if call.excinfo is None:
            item.stash[ENDING] = "passed"
        elif call.excinfo.errisinstance(ChecksFailed):
            item.stash[ENDING] = "checks-failed"
        elif report.skipped:
            item.stash[ENDING] = "skipped"
        else:
            item.stash[ENDING] = "error"
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("proxyfleet", "proxyfleet conformance lab")
    group.addoption("--proxyfleet-nodes", type=int, default=3, help="Windows nodes per scenario lab (default 3).")
    group.addoption("--proxyfleet-linux-nodes", type=int, default=0,
                    help="Linux nodes beside them (default 0; needs root).")
    group.addoption("--proxyfleet-linux-flavour", default="rhcos",
                    help="Their distribution: rhcos (default; an OpenShift worker) or debian (a CAPI one).")
    group.addoption("--proxyfleet-variant", default="correct",
                    help="The built-in reconciler: 'correct' or a deliberately broken variant.")
    group.addoption("--proxyfleet-reconciler-command", default=None,
                    help="Run this external reconciler instead ({kubeconfig}, {ssh_port}, {namespace}, "
                         "{max_unavailable} are filled in).")
    group.addoption("--proxyfleet-reconciler-reboot-timeout", type=float, default=OPERATOR_REBOOT_TIMEOUT,
                    help="How long the reconciler under test waits for a rebooting node before it reports it "
                         "(an external one's declaration, also {reboot_timeout}; default the real operator's, "
                         f"{OPERATOR_REBOOT_TIMEOUT:g} s): a stuck node's report is waited for that long.")
    group.addoption("--proxyfleet-reconciler-resync-period", type=float, default=RECONCILER_RESYNC_PERIOD,
                    help="How often the external reconciler looks at every node again (its declaration, also "
                         f"{{resync_period}}; default {RECONCILER_RESYNC_PERIOD:g} s): a node changed out of band "
                         "is waited for that long more.")
    group.addoption("--proxyfleet-reconciler-env", default="none", choices=ENV_MODES,
                    help="'olm': start the external reconciler with the Proxy status variables and restart "
                         "it when they change, as OLM runs WMCO.")
    group.addoption("--proxyfleet-converge-timeout", type=float, default=None,
                    help="Seconds a step may take to converge (default: from the step's rollout, at least 60).")
    group.addoption("--proxyfleet-shard", default=None, metavar="K/N",
                    help="run only the K-th of N balanced parts of the selected scenarios (shards)")
    group.addoption("--proxyfleet-workflow", action="append", default=[],
                    help="Run only scenarios of this workflow (repeatable).")
    group.addoption("--proxyfleet-scenario", action="append", default=[],
                    help="Run only this scenario, by its function's name (repeatable; with "
                         "--proxyfleet-workflow, it must be one of those workflows').")
    group.addoption("--proxyfleet-repro", default=None, type=Path,
                    help="Run the 'repro' scenario with a customer's settings (JSON written by proxyfleet repro).")
    group.addoption("--proxyfleet-vendor-proxy", default=None, type=Path,
                    help="Run a vendor's proxy as the corporate proxy (JSON written by proxyfleet conformance).")
    group.addoption("--proxyfleet-cluster", default=None, type=Path,
                    help="Judge an existing cluster instead of a lab (JSON written by proxyfleet conformance "
                         "--kubeconfig): only @pytest.mark.cluster scenarios run.")
    group.addoption("--proxyfleet-state-dir", default=None, type=Path,
                    help="Keep each scenario lab's files (kubeconfig, flows, node disks) under this directory.")
    group.addoption("--proxyfleet-state-is-scratch", action="store_true",
                    help="--proxyfleet-state-dir is deleted when the run ends (what must outlive it goes "
                         "elsewhere: the logs of a proxy that did not start).")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        # An xdist worker (of `proxyfleet conformance`, or of any run using the lab fixtures): tear
        # its lab down on SIGTERM like on Ctrl-C, and get SIGTERM when the controller dies.
        interrupt_on_sigterm()
        die_with_parent()
    else:
        _check_state_root(config)
    config.addinivalue_line("markers", "workflow(name): the proxyfleet workflow a scenario belongs to")
    config.addinivalue_line("markers", "lab(**settings): LabSettings fields for this scenario's lab")
    config.addinivalue_line("markers", "cluster: a scenario for an existing cluster (cluster_conformance)")
    config.addinivalue_line("markers", "rollouts(n): how many reboot waves the scenario waits for (longest run first)")


def _check_state_root(config: pytest.Config) -> None:
    """Every lab's keys and logs go below ``--proxyfleet-state-dir`` (``proxyfleet conformance
    --keep``): it must be ours alone, made 0700 if missing, before any lab starts."""
    root: Path | None = config.getoption("--proxyfleet-state-dir", None)
    if root is None:
        return
    try:
        private_directory(root)
    except NotPrivateError as exc:
        raise pytest.UsageError(f"--proxyfleet-state-dir {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The repro scenario runs only for `proxyfleet repro`, and then alone.
    wanted = {"repro"} if config.getoption("--proxyfleet-repro") else set(config.getoption("--proxyfleet-workflow"))
    on_cluster = config.getoption("--proxyfleet-cluster") is not None
    linux = config.getoption("--proxyfleet-linux-nodes") > 0
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("workflow")
        workflow = marker.args[0] if marker and marker.args else None
        if workflow is None:
            keep.append(item)  # not a proxyfleet scenario: not ours to filter
        elif (item.get_closest_marker("cluster") is not None) != on_cluster:
            drop.append(item)  # a lab's scenario on a cluster run, or the other way round
        elif not linux and _needs_linux(item):
            drop.append(item)  # CAPI machines to judge, in a run without Linux nodes
        elif (workflow in wanted) if wanted else workflow != "repro":
            keep.append(item)
        else:
            drop.append(item)
    shard_option = config.getoption("--proxyfleet-shard")
    named = config.getoption("--proxyfleet-scenario")
    if named:
        keep, unnamed = select_named(keep, named, runnable_scenarios(items, on_cluster))
        drop += unnamed
    if shard_option and all(item.get_closest_marker("workflow") for item in keep):
        try:
            chosen = shard_items(keep, shards.Shard.parse(shard_option))
        except shards.ShardError as exc:
            raise pytest.UsageError(str(exc)) from None
        drop += [item for item in keep if item not in chosen]
        keep = chosen
    if drop:
        config.hook.pytest_deselected(items=drop)
    # Longest first (``scenariocosts``: measured, or priced from the reboot waves a scenario
    # declares), so the run's tail is short scenarios; a stable sort keeps the file order otherwise.
    keep.sort(key=lambda item: -_cost(item))
    # On an xdist worker (where "dist" reads "no"), when only scenarios run (as under
    # `proxyfleet conformance`, which uses worksteal): never reorder a mixed test session.
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1 and all(item.get_closest_marker("workflow") for item in keep):
        keep = worksteal_order(keep, workers, _cost)
    items[:] = keep


def scenario_name(item: pytest.Item) -> str:
    """A scenario's name: its function's (a parametrised one's every case shares it)."""
    return str(getattr(item, "originalname", item.name))


def runnable_scenarios(items: Sequence[pytest.Item], on_cluster: bool = False) -> list[pytest.Item]:
    """The scenarios among ``items`` a run can name: the lab's (or, ``on_cluster``, an existing
    cluster's), the repro scenario left out (``proxyfleet repro`` runs it)."""
    return [item for item in items if item.get_closest_marker("workflow") and _workflow(item) != "repro"
            and (item.get_closest_marker("cluster") is not None) == on_cluster]


def select_named(kept: list[pytest.Item], named: Sequence[str],
                 every: Sequence[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """The ``kept`` scenarios ``named`` (``--proxyfleet-scenario``) and the rest; a name that is no
    scenario of ``every`` collected, or one the other choices (workflows, the fleet) left out, is
    a usage error that says which."""
    known = {scenario_name(item): item for item in every}
    unknown = sorted(set(named) - set(known))
    if unknown:
        raise pytest.UsageError(f"no scenario named {', '.join(unknown)} (the scenarios: {', '.join(sorted(known))})")
    chosen = [item for item in kept if scenario_name(item) in named]
    left_out = sorted(set(named) - {scenario_name(item) for item in chosen})
    if left_out:
        workflows = {name: _workflow(known[name]) for name in left_out}
        raise pytest.UsageError("not in this run's selection: " + ", ".join(
            f"{name} (workflow {workflows[name]}{', Linux nodes only' if _needs_linux(known[name]) else ''})"
            for name in left_out))
    return chosen, [item for item in kept if item not in chosen]


def _workflow(item: pytest.Item) -> str:
    marker = item.get_closest_marker("workflow")
    return str(marker.args[0]) if marker and marker.args else "custom"


def _needs_linux(item: pytest.Item) -> bool:
    """A scenario about Linux nodes only (its lab makes them CAPI machines)."""
    marker = item.get_closest_marker("lab")
    return marker is not None and marker.kwargs.get("linux_bootstrap") is not None


T = TypeVar("T")


def shard_items(items: list[pytest.Item], shard: shards.Shard) -> list[pytest.Item]:
    """The scenarios of ``shard``: parts balanced by each scenario's measured cost
    (``scenariocosts``), by node id on a tie (``shards``)."""
    return shards.select(items, shard, _cost, lambda item: item.nodeid)


def worksteal_order(items: list[T], workers: int, weight: Callable[[T], float]) -> list[T]:
    """``items`` (longest first) reordered for xdist's worksteal scheduler, whose first hand-out
    gives each worker one contiguous block (``remaining // workers_left`` items): each block is
    filled longest-processing-time first, so no worker starts with all the long scenarios (with
    twelve scenarios on four workers, the first block held both fault scenarios and the longest
    change, and the run waited ~15 s on that worker's tail). Stealing then evens out the rest."""
    sizes: list[int] = []
    remaining = len(items)
    for index in range(workers):
        sizes.append(remaining // (workers - index))
        remaining -= sizes[-1]
    blocks: list[list[T]] = [[] for _ in sizes]
    loads = [0.0] * len(sizes)
    for item in items:
        block = min((b for b in range(len(blocks)) if len(blocks[b]) < sizes[b]), key=lambda b: (loads[b], b))
        blocks[block].append(item)
        loads[block] += weight(item)
    return [item for block in blocks for item in block]


def _rollouts(item: pytest.Item) -> int:
    marker = item.get_closest_marker("rollouts")
    return int(marker.args[0]) if marker and marker.args else 1


def _cost(item: pytest.Item) -> float:
    """The scenario's measured seconds at this run's fleet size, or its estimate from its
    declared reboot waves."""
    config = item.config
    nodes = int(config.getoption("--proxyfleet-nodes")) + int(config.getoption("--proxyfleet-linux-nodes"))
    return scenariocosts.cost(scenario_name(item), _rollouts(item), nodes)


def _lab_settings(request: pytest.FixtureRequest) -> LabSettings:
    config = request.config
    overrides: dict[str, object] = {}
    marker = request.node.get_closest_marker("lab")
    if marker is not None:
        overrides.update(marker.kwargs)
    state_root: Path | None = config.getoption("--proxyfleet-state-dir")
    state_dir = None
    if state_root is not None:
        state_dir = state_root / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    settings: dict[str, Any] = {
        "nodes": config.getoption("--proxyfleet-nodes"), "linux_nodes": config.getoption("--proxyfleet-linux-nodes"),
        "linux_flavour": config.getoption("--proxyfleet-linux-flavour"),
        "state_dir": state_dir,
        "state_is_scratch": bool(config.getoption("--proxyfleet-state-is-scratch")),
        "reconciler": config.getoption("--proxyfleet-variant"),
        "reconciler_command": config.getoption("--proxyfleet-reconciler-command"),
        "reconciler_env": config.getoption("--proxyfleet-reconciler-env"),
        "reconciler_reboot_timeout": config.getoption("--proxyfleet-reconciler-reboot-timeout"),
        "reconciler_resync_period": config.getoption("--proxyfleet-reconciler-resync-period"),
        "second_proxy": False, "reboot_duration": 0.3,
        # Services still come up in four stages after sshd, 0.6 s in all from the reconciler's first
        # look at them in the new boot (the judge's looks do not count): a reconciler that does not
        # wait for them sees them down however slow the machine (self-test: no-service-wait).
        "service_stage_seconds": 0.15,
        # Windows keeps answering SSH for a moment after Restart-Computer: the window in which an
        # "early reachability" bug shows. Long enough to be seen on a loaded CI machine.
        "shutdown_delay": 0.2,
    }
    settings.update(overrides)
    vendor: Path | None = config.getoption("--proxyfleet-vendor-proxy")
    if vendor is not None:
        settings["vendor_proxy"] = ProxyOptions.from_json(json.loads(vendor.read_text())).spec()
    repro = _repro_spec(config)
    if repro is not None:
        vendor_spec = settings.get("vendor_proxy")
        settings.update(customer_settings(repro.get("install_config"),
                                          [tuple(t) for t in repro.get("targets", [])],
                                          vendor_spec.ca_pem if vendor_spec is not None else None))
        # checked by `proxyfleet repro` before it started this run
        settings["destinations"] = [parse_destination(text, kind) for text, kind in repro.get("destinations", [])]
    return LabSettings(**settings)


def _repro_spec(config: pytest.Config) -> dict[str, Any] | None:
    path: Path | None = config.getoption("--proxyfleet-repro")
    if path is None:
        return None
    spec: dict[str, Any] = json.loads(path.read_text())
    return spec


@pytest.fixture
def proxyfleet_repro(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The customer's settings for the repro scenario (skips without ``--proxyfleet-repro``)."""
    spec = _repro_spec(request.config)
    if spec is None:
        pytest.skip("only with proxyfleet repro")
    return spec


@pytest_asyncio.fixture
async def proxyfleet_lab(request: pytest.FixtureRequest) -> AsyncIterator[Lab]:
    """A running lab (control plane, origins, proxies, fleet, reconciler) for one scenario."""
    async with Lab(_lab_settings(request)) as lab:
        yield lab


@pytest_asyncio.fixture
async def conformance(request: pytest.FixtureRequest, proxyfleet_lab: Lab) -> AsyncIterator[Conformance]:
    """The judge for one scenario; its results are attached to the test report."""
    workflow = _workflow(request.node)
    judge = Conformance(proxyfleet_lab, scenario=request.node.name,
                        converge_timeout=request.config.getoption("--proxyfleet-converge-timeout"), quiet=LAB_QUIET)
    await judge.start()
    try:
        yield judge
    finally:
        _attach_result(request, workflow, judge, api_internal_host=_api_internal_host(proxyfleet_lab),
                       flows=_flow_summary(proxyfleet_lab), violations=_violations(proxyfleet_lab))
        await judge.close()


@pytest_asyncio.fixture
async def cluster_conformance(request: pytest.FixtureRequest) -> AsyncIterator[Conformance]:
    """The judge for one scenario against an existing cluster (``--proxyfleet-cluster``): nothing
    is started, the cluster's own reconciler is judged."""
    path: Path | None = request.config.getoption("--proxyfleet-cluster")
    if path is None:
        pytest.skip("only against an existing cluster (proxyfleet conformance --kubeconfig)")
    workflow = _workflow(request.node)
    target = ClusterTarget.from_json(json.loads(await asyncio.to_thread(path.read_text)))
    judge = Conformance(None, scenario=request.node.name, cluster=target,
                        converge_timeout=request.config.getoption("--proxyfleet-converge-timeout"),
                        reconciler_reboot_timeout=request.config.getoption("--proxyfleet-reconciler-reboot-timeout"),
                        reconciler_resync_period=request.config.getoption("--proxyfleet-reconciler-resync-period"),
                        quiet=CLUSTER_QUIET)
    started = False
    try:
        await judge.start()
        started = True
        yield judge
    finally:
        try:
            if started:
                _attach_result(request, workflow, judge)
                await judge.lift_run_cordons()  # a scenario that ended before its own uncordon
        finally:
            await judge.close()


def _attach_result(request: pytest.FixtureRequest, workflow: str, judge: Conformance, api_internal_host: str = "",
                   flows: dict[str, dict[str, int]] | None = None,
                   violations: list[dict[str, object]] | None = None) -> None:
    """The scenario's checks, in the test report's user properties (read by ``proxyfleet conformance``)."""
    ending = request.node.stash.get(ENDING, "error")
    status: Status = "passed" if ending == "passed" else "skipped" if ending == "skipped" else "failed"
    result = ScenarioResult(
        name=request.node.name, workflow=workflow, status=status,
        ending=ending, nodes=len(judge.addresses), checks=list(judge.results), timeline=judge.timeline(),
        api_internal_host=api_internal_host, flows=flows or {}, violations=violations or [])
    request.node.user_properties.append((PROPERTY, json.dumps(result.to_json())))


def _api_internal_host(lab: Lab) -> str:
    return lab.control_plane.plan.api_internal_host


def _flow_summary(lab: Lab) -> dict[str, dict[str, int]]:
    summary: dict[str, dict[str, int]] = {}
    for name, proxy in (("proxy", lab.proxy), ("proxy2", lab.proxy2)):
        if proxy is None:
            continue
        for flow in proxy.flows():
            key = f"{name} {flow['kind']} {flow['host']} {flow['status']}"
            summary.setdefault(key, {"count": 0})["count"] += 1
    return summary


def _violations(lab: Lab) -> list[dict[str, object]]:
    return [v.as_json() for v in lab.origins.violations()]
