"""The judge's seam: each check judged from the evidence it needs, or skipped saying what is
missing. (Its wait for convergence is test_converging's; its step orchestration runs in every
scenario and self-test.)"""

import asyncio
import contextlib
import datetime as dt
import os
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncssh
import pytest

from proxyfleet.core.contract import EGRESS_SERVICES, PROXY_VARIABLES, RECONCILER_RESYNC_PERIOD
from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.nodessh import HostKeyMismatch, NodeError
from proxyfleet.harness.conformance import checks
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.deadlines import FLOOR, LIVE_CHANGE_S
from proxyfleet.harness.conformance.evidence import (
    LAB_ONLY,
    TRAFFIC_CHECKS,
    UNCONFIGURED,
    Evidence,
    HostRecord,
    OutageRecord,
    ProbedDestination,
    Step,
)
from proxyfleet.harness.conformance.expectations import Expected
from proxyfleet.harness.conformance.judge import STARVED_ATTEMPTS, Conformance, LabRequired, StarvedLook
from proxyfleet.harness.conformance.probe import NodeState, PullResult
from proxyfleet.harness.conformance.results import CheckResult
from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.windows.machine import LAST_STAGE
from tests.support import wait_until

ADDRESS = "10.0.0.5"
PROXY = "http://proxy.corp.example:3128"
READY_NODE = {"metadata": {"name": "win-0"}, "spec": {},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def _cluster_judge(tmp_path: Path, reboot_timeout: float | None = None) -> Conformance:
    key = tmp_path / "id"
    key.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:1}}]\n"
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    return Conformance(None, cluster=ClusterTarget(kubeconfig, key, PROXY), reconciler_reboot_timeout=reboot_timeout)


# the report wait (the declared timeout, 60 s and a tenth of it), then the rest of the rollout: an
# existing cluster's reboot times are not known, so the least deadline
@pytest.mark.parametrize(("declared", "deadline"), [(600.0, 780.0), (30.0, 153.0), (None, 780.0)])
def test_a_step_with_a_stuck_node_waits_for_the_declared_reboot_timeout(tmp_path: Path, declared: float | None,
                                                                        deadline: float) -> None:
    """The judge adapts to the operator: the stuck node's report is waited for as long as the
    reconciler declared it waits (default: the real operator's 600 s), a margin on top, and the step
    says so; a step with no stuck node keeps the converge timeout."""
    judge = _cluster_judge(tmp_path, declared)
    judge._targets["10.0.0.5"] = UNCONFIGURED
    stuck = Step("proxy added", dt.datetime.now(dt.UTC), ["10.0.0.5"], [], {}, stuck=["10.0.0.5"])
    assert judge._deadline(stuck) == deadline
    assert stuck.deadline is not None and stuck.deadline.kind == "stuck-report"
    assert f"reboot timeout ({declared or 600:g} s) and a margin — then the rest of the rollout" in stuck.note
    plain = Step("proxy added", dt.datetime.now(dt.UTC), ["10.0.0.5"], [], {})
    assert judge._deadline(plain) == FLOOR and not plain.note
    assert plain.deadline is not None and plain.deadline.basis == "the default"  # an existing cluster's reboot times are not known


async def test_a_lab_step_deadline_is_priced_with_the_lab_s_own_timings(tmp_path: Path) -> None:
    """A lab judge prices a rollout with the lab's reboot and pod-stop times and its
    maxUnavailable; ``--converge-timeout`` overrides it."""
    async with Lab(LabSettings(nodes=2, proxy=False, reboot_duration=2.0, shutdown_delay=0.5, workloads=False,
                               state_dir=tmp_path / "lab")) as lab:
        judge = Conformance(lab)
        timings = judge._timings()
        assert timings is not None
        assert timings.reboot_s == pytest.approx(0.5 + lab.fleet.settings.shutdown_hold_seconds + 2.0
                                                 + lab.fleet.settings.service_hold_seconds + LAST_STAGE * 0.25
                                                 + lab.settings.heartbeat)
        assert timings.eviction_s == 1.0 and timings.wave_overhead_s == lab.settings.settle_delay
        assert judge._planned(0).seconds == FLOOR
        assert timings.live_s == LIVE_CHANGE_S and judge._planned(0, live=1000).seconds == 1000 * LIVE_CHANGE_S
        # a step that changes only the nodes' trusted CAs counts them as live changes, not reboots
        old = Expected({"HTTP_PROXY": PROXY, "HTTPS_PROXY": None, "NO_PROXY": None}, {"aa": "CN=Old CA"}, {})
        new = Expected({"HTTP_PROXY": PROXY, "HTTPS_PROXY": None, "NO_PROXY": None}, {"bb": "CN=New CA"}, {})
        members = [n.address for n in lab.fleet.nodes]
        for address in members:
            judge._targets[address] = new
        rotated = Step("new proxy CA added to the bundle", dt.datetime.now(dt.UTC), members, [],
                       dict.fromkeys(members, old))
        assert judge._deadline(rotated) == FLOOR
        assert rotated.deadline is not None and rotated.deadline.basis == "2 to change live fit in the least deadline"
        big = judge._planned(300)
        assert big.seconds > 300 * (timings.reboot_s + timings.eviction_s)  # one wave each: a budget of 1
        assert "300 wave(s) of up to 1" in big.basis
        explicit = Conformance(lab, converge_timeout=7.0)
        assert (explicit._planned(300).seconds, explicit._planned(300).basis) == (7.0, "--converge-timeout")
        assert explicit._planned(300).kind == "explicit"


@pytest.mark.parametrize("stall_after_last", [False, True])
async def test_a_step_keeps_how_far_the_lab_s_stalls_had_moved_its_deadline_when_its_last_node_converged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stall_after_last: bool) -> None:
    """The lab's loop really blocked for 0.3 s while the step waited: counted when it came before the
    step's last node converged (the deadline had moved that far by then), not when it came after."""
    from proxyfleet.harness.conformance import judge as judging

    monitor = process_monitor()
    await asyncio.sleep(0)  # one turn of the loop: the new monitor's task asks for its first wake-up

    async def stalled_loop() -> None:
        before = len(monitor.record._stalls)
        time.sleep(0.3)  # noqa: ASYNC251 - the stall under test: nothing else on this loop runs meanwhile
        await wait_until(lambda: len(monitor.record._stalls) > before, what="the monitor's measure of the stall")

    async def converge(looks: Any, members: list[str], others: list[str], changes: Any, converged: dict[str, float],
                       quiet: float, within: float, stalled: Any) -> dict[str, str]:
        began = time.monotonic()
        if not stall_after_last:
            await stalled_loop()
        converged[members[0]] = time.monotonic() - began
        if stall_after_last:
            await stalled_loop()
        return {}

    monkeypatch.setattr(judging, "converge", converge)
    judge = _cluster_judge(tmp_path)
    judge._targets[ADDRESS] = UNCONFIGURED
    step = Step("CA rotated", dt.datetime.now(dt.UTC), [ADDRESS], [], {})
    assert await judge._converge(step) == {}
    if stall_after_last:
        assert step.moved < 0.1
    else:
        assert 0.25 < step.moved < 1.0
    judge.steps.append(step)
    assert judge.timeline()[0]["deadline_moved_s"] == round(step.moved, 3)


def test_a_step_that_drifts_a_node_waits_for_the_declared_resync(tmp_path: Path) -> None:
    """A node changed out of band is repaired at the reconciler's next resync: that step waits
    the declared period (default ``RECONCILER_RESYNC_PERIOD``) on top of its plan; others do not."""
    for declared, resync in ((None, RECONCILER_RESYNC_PERIOD), (3600.0, 3600.0)):
        judge = _cluster_judge(tmp_path)
        if declared is not None:
            judge = Conformance(None, cluster=judge.cluster, reconciler_resync_period=declared)
        judge._targets["10.0.0.5"] = UNCONFIGURED
        drifted = Step("the proxy CA deleted on a host", dt.datetime.now(dt.UTC), ["10.0.0.5"], [], {},
                       drifted={"10.0.0.5"})
        assert judge._deadline(drifted) == FLOOR + resync
        assert drifted.deadline is not None and f"the reconciler's resync ({resync:g} s)" in drifted.deadline.basis
        plain = Step("proxy added", dt.datetime.now(dt.UTC), ["10.0.0.5"], [], {})
        assert judge._deadline(plain) == FLOOR


def test_certificates_are_named_from_every_target_before_and_after_the_step(tmp_path: Path) -> None:
    """What a Root store lacks or has too many of is named by subject: from every target a node
    held before the step or holds now — each distinct target read once, however many nodes share it."""
    judge = _cluster_judge(tmp_path)
    old = Expected({"HTTP_PROXY": PROXY, "HTTPS_PROXY": None, "NO_PROXY": None}, {"aa": "CN=Old CA"}, {})
    new = Expected({"HTTP_PROXY": PROXY, "HTTPS_PROXY": None, "NO_PROXY": None}, {"bb": "CN=New CA"}, {})
    for index in range(1000):
        judge._targets[f"10.0.{index // 250}.{index % 250}"] = new
    step = Step("CA rotated", dt.datetime.now(dt.UTC), list(judge._targets), [], dict.fromkeys(judge._targets, old))
    assert judge._subjects(step) == {"aa": "CN=Old CA", "bb": "CN=New CA"}


def test_a_judge_needs_a_lab_or_a_cluster_and_a_cluster_has_no_lab(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a lab or a cluster"):
        Conformance(None)
    judge = _cluster_judge(tmp_path)
    assert not judge.on_lab and judge.addresses == []
    with pytest.raises(LabRequired, match="needs the embedded lab"):
        _ = judge.lab
    assert judge._activity("10.0.0.5") != judge._activity("10.0.0.5")  # a real host: every look is new


# --- each check judged from the evidence it needs, or skipped saying what is missing ------------

def _judged(judge: Conformance, evidence: Evidence, started: dt.datetime) -> dict[str, CheckResult]:
    """One member judged after a step that changed nothing, from ``evidence``."""
    judge.baseline_roots[ADDRESS] = frozenset({"AA"})
    judge.baseline_files[ADDRESS] = frozenset()
    step = Step("a step", started, members=[ADDRESS], deconfigured=[], before={ADDRESS: UNCONFIGURED})
    judge._targets[ADDRESS] = UNCONFIGURED
    state = NodeState(dict.fromkeys(PROXY_VARIABLES), frozenset({"AA"}), started - dt.timedelta(hours=1),
                      dict.fromkeys(EGRESS_SERVICES, started - dt.timedelta(minutes=5)))
    judge._verify_node(step, ADDRESS, None, READY_NODE, state, {}, evidence, judge._overtaken(step, evidence),
                       judge._subjects(step))
    return {r.check: r for r in step.results}


def test_without_host_records_every_lab_only_check_is_skipped_with_its_reason(tmp_path: Path) -> None:
    results = _judged(_cluster_judge(tmp_path), Evidence(routes_observed=False), dt.datetime.now(dt.UTC))
    for check in ("service-environment", "firewall", "reboots", "drained-while-down", "drained"):
        assert results[check].status == "skipped", check
        assert results[check].observed == LAB_ONLY[check]
    for check, option in TRAFFIC_CHECKS.items():
        assert results[check].status == "skipped" and option in results[check].observed
    # what the API and the probes show is judged, never skipped
    for check in ("converged", "registry-env", "certificates", "files", "services-restarted", "node-ready"):
        assert results[check].status == "passed", (check, results[check])
    assert "kubelet traffic not judged" in results["node-ready"].expected


def test_with_host_records_the_same_checks_are_judged_and_can_fail(tmp_path: Path) -> None:
    started = dt.datetime.now(dt.UTC)
    judge = _cluster_judge(tmp_path)
    quiet = HostRecord(service_environments={s: {"PATH": "C:\\Windows"} for s in EGRESS_SERVICES}, boots=0,
                       outages=(), root_removed=frozenset(), commands=3, listening=True)
    evidence = Evidence(routes_observed=False, hosts={ADDRESS: quiet}, origin_routes={}, budget_bypasses={}, budget=1)
    passed = _judged(judge, evidence, started)
    for check in ("service-environment", "firewall", "reboots", "drained-while-down", "drained"):
        assert passed[check].status == "passed", (check, passed[check])
    # a node rebooted twice with nothing to change, while still holding a pod, and refused at the
    # firewall on the way to an origin of unknown route
    down = started + dt.timedelta(seconds=1)
    restless = HostRecord(service_environments=dict.fromkeys(EGRESS_SERVICES), boots=2,
                          outages=(OutageRecord(down, down + dt.timedelta(seconds=2), at_down=False, at_up=False,
                                                pods_at_down=("default/web-1",)),),
                          root_removed=frozenset(), commands=9, listening=True)
    evidence = Evidence(routes_observed=False, hosts={ADDRESS: restless}, origin_routes={},
                        violations={ADDRESS: ["somewhere"]}, budget_bypasses={"win-0": ["default/db-0: deleted"]},
                        budget=1)
    failed = _judged(judge, evidence, started)
    for check in ("service-environment", "firewall", "reboots", "drained-while-down", "drained"):
        assert failed[check].status == "failed", (check, failed[check])
    assert "default/web-1" in failed["drained"].observed and "default/db-0" in failed["drained"].observed


# --- host keys pinned on first contact bind the run's later scenarios ---------------------------

async def test_a_key_pinned_in_one_scenario_binds_the_next_and_a_changed_one_is_refused(
        tmp_path: Path, plane: ControlPlane, fleet: Fleet) -> None:
    node = fleet.nodes[0]
    target = ClusterTarget(plane.kubeconfig_path, fleet.client_key_path, PROXY, ssh_port=fleet.port,
                           instances={node.address: "Administrator"}, host_keys_file=tmp_path / "host-keys.json")
    first = Conformance(None, cluster=target)
    try:
        await first.start()  # first contact: the node's key is pinned for the run
    finally:
        await first.close()
    original = node.host_key_openssh
    assert target.host_key_pins([node.address]) == {node.address: original}
    assert stat.S_IMODE(os.stat(tmp_path / "host-keys.json").st_mode) == 0o600
    await node.replace_host_key()  # someone in the middle, or a reinstalled host, between two scenarios
    commands = node.ssh_commands
    second = Conformance(None, cluster=ClusterTarget.from_json(target.to_json()))  # as the next scenario reads it
    try:
        with pytest.raises(HostKeyMismatch, match=f"the SSH host key of {node.address} is not the one pinned"):
            await second.start()
        pull = await second.probe.pull(node.address, "quay.io/a:1")
        assert not pull.ok and "is not the one pinned" in pull.output
    finally:
        await second.close()
    assert node.ssh_commands == commands  # nothing ran on the host that showed the other key
    assert target.host_key_pins([node.address]) == {node.address: original}  # the first pin stays


# --- the lab's own starvation is not a verdict -------------------------------------------------------

UNKNOWN_NODE = {"metadata": {"name": "win-0"}, "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}}


@pytest.mark.parametrize(("node", "status", "says"), [
    (READY_NODE, "passed", "Ready once the lab's own event loop recovered (it had stalled up to"),
    (UNKNOWN_NODE, "failed", "Node not Ready (NodeStatusUnknown)"),  # the lab calm, and still silent
])
async def test_a_node_left_unknown_while_the_lab_starved_is_looked_at_again(
        tmp_path: Path, node: dict[str, object], status: str, says: str) -> None:
    judge = _cluster_judge(tmp_path)

    async def nodes() -> dict[str, dict[str, object]]:
        return {ADDRESS: node}

    judge._node_objects = nodes  # type: ignore[method-assign]
    step = Step("proxy added", dt.datetime.now(dt.UTC), members=[ADDRESS], deconfigured=[], before={})
    step.results.append(CheckResult(ADDRESS, "node-ready", "inconclusive", "Ready, schedulable",
                                    "Node not Ready (NodeStatusUnknown) while the lab's own event loop stalled up "
                                    "to 2.0 s", step.name))
    step.results.append(CheckResult(ADDRESS, "registry-env", "passed", "x", "x", step.name))
    await judge._rejudge_starved(step, settle=0.5)
    [again] = [r for r in step.results if r.check == "node-ready"]
    assert again.status == status and says in again.observed
    assert [r.check for r in step.results] == ["node-ready", "registry-env"]  # only that one looked at again


class _StarvedLoop:
    """A lag monitor of a loop that never recovers: every look sees a 2 s stall."""

    def worst(self, since: float, until: float | None = None) -> float:
        return 2.0

    def stalled(self, since: float, until: float | None = None) -> float:
        return 0.0


async def test_a_node_still_unknown_while_the_lab_stays_starved_stays_inconclusive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from proxyfleet.harness.conformance import judge as judging

    judge = _cluster_judge(tmp_path)

    async def nodes() -> dict[str, dict[str, object]]:
        return {ADDRESS: UNKNOWN_NODE}

    judge._node_objects = nodes  # type: ignore[method-assign]
    monkeypatch.setattr(judging, "process_monitor", _StarvedLoop)
    monkeypatch.setattr(judging, "REJUDGE_WITHIN", 1.0)
    step = Step("proxy added", dt.datetime.now(dt.UTC), members=[ADDRESS], deconfigured=[], before={})
    step.results.append(CheckResult(ADDRESS, "node-ready", "inconclusive", "Ready, schedulable",
                                    "Node not Ready (NodeStatusUnknown) while the lab's own event loop stalled up "
                                    "to 2.0 s", step.name))
    await judge._rejudge_starved(step, settle=0.5)
    [again] = step.results
    assert again.status == "inconclusive"
    assert "stalled up to 2.0 s" in again.observed and "not judged" in again.observed


# --- an out-of-band change waits for a host still in its reboot ---------------------------------------

@contextlib.asynccontextmanager
async def judging(tmp_path: Path, plane: ControlPlane, fleet: Fleet) -> AsyncIterator[Conformance]:
    """A started judge of ``fleet``'s first node as an existing cluster's instance."""
    node = fleet.nodes[0]
    target = ClusterTarget(plane.kubeconfig_path, fleet.client_key_path, PROXY, ssh_port=fleet.port,
                           instances={node.address: "Administrator"}, host_keys_file=tmp_path / "host-keys.json")
    judge = Conformance(None, cluster=target)
    await judge.start()
    try:
        yield judge
    finally:
        await judge.close()


async def test_an_out_of_band_change_waits_for_a_host_still_down(tmp_path: Path, plane: ControlPlane,
                                                                 fleet: Fleet) -> None:
    """A step can end while a reboot it started is still under way (a short deadline, a slow
    machine): the scenario's next change on that host waits for it, as the person at the console
    would, instead of breaking the scenario — and nothing runs on the host before it is back."""
    node = fleet.nodes[0]
    async with judging(tmp_path, plane, fleet) as judge:
        await node.go_offline()
        attempts = 0
        reach = judge.probe.reach

        async def counted(address: str) -> None:
            nonlocal attempts
            attempts += 1
            await reach(address)

        judge.probe.reach = counted  # type: ignore[method-assign]
        change = asyncio.create_task(judge.on_host(
            node, "[Environment]::SetEnvironmentVariable('NO_PROXY', 'x.example', 'Machine')\n"
                  "@{ ok = $true } | ConvertTo-Json"))
        await wait_until(lambda: attempts >= 2, what="two refused attempts")
        assert not change.done()
        assert node.machine.machine_environment().get("NO_PROXY") is None  # nothing ran meanwhile
        await node.come_online()
        await asyncio.wait_for(change, 60)
        assert node.machine.machine_environment().get("NO_PROXY") == "x.example"


async def test_a_removed_instance_down_for_its_reboot_is_looked_at_once_it_is_back(
        tmp_path: Path, plane: ControlPlane, fleet: Fleet) -> None:
    """A removed instance's clean-up may end in a reboot after the look that found it clean (at
    100 nodes its drain made the reboot come late): the judge's verifying look then finds it down
    and looks again once it is back, instead of judging it unreachable."""
    node = fleet.nodes[0]
    async with judging(tmp_path, plane, fleet) as judge:
        judge._listening = lambda: {n.address for n in fleet.nodes if n.is_listening}  # type: ignore[method-assign]
        await node.go_offline()
        with pytest.raises(NodeError) as down:
            await judge.probe.observe(node.address)
        looked = asyncio.create_task(judge._observe_when_back(node.address, down.value))
        await asyncio.sleep(0)
        assert not looked.done()
        await node.come_online()
        state = await asyncio.wait_for(looked, 60)
        assert isinstance(state, NodeState)


async def test_a_mixed_lab_s_judge_hands_each_kind_to_its_own_configmap(tmp_path: Path) -> None:
    """Windows nodes go to windows-instances as Administrator, Linux nodes to linux-instances as
    their own user; removing one kind's node rewrites only that kind's list."""
    from kubernetes import client as k8s

    from proxyfleet.core.contract import LINUX_INSTANCES, OPERATOR_NAMESPACE
    from proxyfleet.harness.lab import admin

    async with Lab(LabSettings(nodes=1, linux_nodes=2, proxy=False, workloads=False, reconciler=None,
                               state_dir=tmp_path / "lab")) as lab:
        judge = Conformance(lab)
        try:
            windows, linux = judge.nodes[0], judge.linux_nodes
            assert judge.addresses == [windows.address, *(n.address for n in linux)]
            assert judge.probe.linux == {n.address for n in linux}
            await judge.add_instances(judge.every_node)
            assert await admin.instances(judge.api) == {windows.address: "Administrator"}
            core = k8s.CoreV1Api(judge.api)

            async def linux_listed() -> dict[str, str]:  # (the API server runs on this loop)
                found = await asyncio.to_thread(core.read_namespaced_config_map, LINUX_INSTANCES, OPERATOR_NAMESPACE)
                return dict(found.data or {})

            assert await linux_listed() == {n.address: "username=core" for n in linux}
            await judge.remove_instances(linux[-1:])
            assert await linux_listed() == {linux[0].address: "username=core"}
            assert await admin.instances(judge.api) == {windows.address: "Administrator"}
            # each kind is looked at its own way
            assert isinstance(await judge.probe.look(windows.address), NodeState)
            assert not isinstance(await judge.probe.look(linux[0].address), NodeState)
        finally:
            await judge.close()


async def test_linux_nodes_changed_out_of_band_and_not_repaired_fail_what_was_changed(tmp_path: Path) -> None:
    """The drift scenario's Linux changes are seen for what they are: the CA's anchor deleted (and
    the bundle extracted again) fails ``certificates``; the runtime's drop-in deleted (the runtime
    restarted) fails ``service-environment``. Here the reconciler does not look again (its resync
    is an hour), so nothing repairs them; with a resync (the scenario) it must."""
    from proxyfleet.scenarios.actions import linux_anchor_removed, linux_runtime_unproxied

    async with Lab(LabSettings(nodes=0, linux_nodes=2, install_proxy=True, workloads=False, reconciler="correct",
                               resync_period=3600.0,
                               state_dir=tmp_path / "lab")) as lab:
        judge = Conformance(lab)
        await judge.start()
        try:
            joined = await judge.step("join", lambda: judge.add_instances(judge.every_node))
            assert not [r for r in joined if r.status == "failed"], "\n".join(
                f"{r.node} {r.check}: {r.observed}" for r in joined if r.status == "failed")
            first, last = judge.linux_nodes
            judge.converge_timeout = 5.0  # (the state is what is judged: nothing would repair it)

            async def drift() -> None:
                await judge.on_host(first, linux_anchor_removed(lab.mitm_ca_pem))
                await judge.on_host(last, linux_runtime_unproxied())

            results = await judge.step("drift", drift)
            with pytest.raises(AssertionError, match="exited 1"):  # a change that fails says so
                await judge.on_host(first, "exit 1")
        finally:
            await judge.close()
    failed = {(r.node, r.check) for r in results if r.status == "failed"}
    assert (first.address, "certificates") in failed and (last.address, "service-environment") in failed, failed
    assert (first.address, "service-environment") not in failed and (last.address, "certificates") not in failed


async def test_a_node_whose_reboot_the_lab_failed_is_inconclusive_never_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's own failure (a reboot it could not finish leaves the node down) is the lab's,
    not the reconciler's: every check of that node that did not pass says so and is inconclusive."""
    async with Lab(LabSettings(nodes=0, linux_nodes=2, install_proxy=True, workloads=False, reconciler="correct",
                               state_dir=tmp_path / "lab")) as lab:
        judge = Conformance(lab)
        await judge.start()
        try:
            joined = await judge.step("join", lambda: judge.add_instances(judge.every_node))
            assert not [r for r in joined if r.status != "passed" and r.status != "skipped"]
            broken, kept = lab.fleet.linux_nodes
            judge.converge_timeout = 5.0

            def lab_bug() -> list[int]:
                raise RuntimeError("the lab's own bug")

            monkeypatch.setattr(broken.mounts, "end_processes", lab_bug)

            async def reboot() -> None:
                broken.request_reboot()
                await wait_until(lambda: broken.reboot_failure is not None, what="the failed reboot")

            results = await judge.step("the lab fails a reboot", reboot)
        finally:
            await judge.close()
    mine = [r for r in results if r.node == broken.config.address]
    assert not [r for r in results if r.status == "failed"], [(r.node, r.check, r.observed) for r in results]
    inconclusive = [r for r in mine if r.status == "inconclusive"]
    assert inconclusive and all("the lab failed the node's reboot: RuntimeError(\"the lab's own bug\")" in r.observed
                                for r in inconclusive)
    assert {r.status for r in results if r.node == kept.config.address} <= {"passed", "skipped"}


class _Pulls:
    """A node's pulls for ``Conformance._probe_traffic``: each answer in turn, the loop blocked
    (a real stall the lab's monitor measures) for the ones that say so."""

    def __init__(self, answers: list[tuple[bool, str, float]]) -> None:
        self.answers = answers
        self.pulled: list[str] = []

    async def pull(self, address: str, image: str) -> PullResult:
        ok, output, block = self.answers[len(self.pulled)]
        self.pulled.append(image)
        if block:
            time.sleep(block)  # noqa: ASYNC251 - the lab's own loop starved, as a loaded machine starves it
            await asyncio.sleep(0.2)  # the monitor's ticker runs again and measures the stall
        return PullResult(ok, output)


def _prober(answers: list[tuple[bool, str, float]], lab: bool = True) -> tuple[Any, _Pulls]:
    pulls = _Pulls(answers)
    count = iter(range(100))
    stand_in = SimpleNamespace(probe=pulls, _lab=object() if lab else None,
                               evidence=SimpleNamespace(probe_target=lambda d: (f"{d.text}-{next(count)}", None)))
    stand_in._lab_calm = lambda: Conformance._lab_calm(stand_in)  # type: ignore[arg-type]
    stand_in._timed_out_starved = lambda began, failure: Conformance._timed_out_starved(
        stand_in, began, failure)  # type: ignore[arg-type]
    return stand_in, pulls


INTRANET = ProbedDestination("pull-intranet", "registry.corp.internal/corp/agent:1.0", image=True, internet=False)
TIMEOUT = 'Head "https://registry.corp.internal/v2/corp/agent/manifests/x": net/http: TLS handshake timeout'


async def test_a_pull_that_timed_out_while_the_lab_starved_is_made_again_once_the_lab_is_calm() -> None:
    process_monitor()
    await asyncio.sleep(0.2)
    stand_in, pulls = _prober([(False, TIMEOUT, 1.3), (True, "Image is up to date", 0.0)])
    probed = await Conformance._probe_traffic(stand_in, "127.10.0.1", INTRANET)  # type: ignore[arg-type]
    assert probed.result.ok and probed.attempts == 2 and probed.starved == 0.0
    assert len(set(pulls.pulled)) == 2  # each attempt with an id of its own


async def test_a_timeout_while_the_lab_ran_or_on_an_existing_cluster_is_judged_as_it_came() -> None:
    process_monitor()
    await asyncio.sleep(0.2)
    stand_in, _ = _prober([(False, TIMEOUT, 0.0)])
    probed = await Conformance._probe_traffic(stand_in, "127.10.0.1", INTRANET)  # type: ignore[arg-type]
    assert not probed.result.ok and probed.attempts == 1 and probed.starved == 0.0
    stand_in, _ = _prober([(False, TIMEOUT, 1.3)], lab=False)
    probed = await Conformance._probe_traffic(stand_in, "127.10.0.1", INTRANET)  # type: ignore[arg-type]
    assert probed.attempts == 1 and probed.starved == 0.0  # the cluster's nodes are not on the lab's loop
    stand_in, _ = _prober([(False, "x509: certificate signed by unknown authority", 1.3)])
    probed = await Conformance._probe_traffic(stand_in, "127.10.0.1", INTRANET)  # type: ignore[arg-type]
    assert probed.attempts == 1  # a refusal is a refusal, however slow the lab was


@pytest.mark.slow
async def test_a_pull_starved_at_every_attempt_ends_inconclusive_never_failed() -> None:
    process_monitor()
    await asyncio.sleep(0.2)
    stand_in, pulls = _prober([(False, TIMEOUT, 1.3)] * STARVED_ATTEMPTS)
    probed = await Conformance._probe_traffic(stand_in, "127.10.0.1", INTRANET)  # type: ignore[arg-type]
    assert probed.attempts == STARVED_ATTEMPTS == len(pulls.pulled) and probed.starved >= 1.0
    verdict = checks.starved_traffic(checks.Verdict(False, "via the proxy", "pull failed"), probed.starved,
                                     probed.attempts)
    assert verdict.inconclusive


class _Looks:
    """A node's looks for ``Conformance._look``: each a failure (its text, the loop blocked that
    long: a real stall) or, once they run out, a state."""

    def __init__(self, failures: list[tuple[str, float]]) -> None:
        self.failures = failures
        self.looked = 0

    async def look(self, address: str) -> str:
        self.looked += 1
        if self.looked > len(self.failures):
            return "a state"
        text, block = self.failures[self.looked - 1]
        if block:
            time.sleep(block)  # noqa: ASYNC251 - the lab's own loop starved, as a loaded machine starves it
            await asyncio.sleep(0.2)  # the monitor's ticker runs again and measures the stall
        raise NodeError(text)


def _looker(failures: list[tuple[str, float]], lab: bool = True) -> tuple[Any, _Looks]:
    looks = _Looks(failures)
    stand_in = SimpleNamespace(probe=looks, _lab=object() if lab else None)
    stand_in._lab_calm = lambda: Conformance._lab_calm(stand_in)  # type: ignore[arg-type]
    stand_in._timed_out_starved = lambda began, failure: Conformance._timed_out_starved(
        stand_in, began, failure)  # type: ignore[arg-type]
    return stand_in, looks


LOOK_TIMEOUT = "127.10.0.1: no answer within 20 s"


async def test_a_look_that_timed_out_while_the_lab_starved_is_made_again_and_one_starved_throughout_is_inconclusive(
        ) -> None:
    process_monitor()
    await asyncio.sleep(0.2)
    stand_in, looks = _looker([(LOOK_TIMEOUT, 1.3)])
    assert await Conformance._look(stand_in, "127.10.0.1") == "a state" and looks.looked == 2  # type: ignore[arg-type]
    stand_in, looks = _looker([(LOOK_TIMEOUT, 1.3)] * STARVED_ATTEMPTS)
    with pytest.raises(StarvedLook) as starved:
        await Conformance._look(stand_in, "127.10.0.1")  # type: ignore[arg-type]
    assert (starved.value.attempts, looks.looked) == (STARVED_ATTEMPTS, STARVED_ATTEMPTS)
    assert starved.value.starved >= 1.0 and str(starved.value) == LOOK_TIMEOUT
    verdict = checks.starved_traffic(checks.Verdict(False, "a readable node", f"unreachable: {starved.value}"),
                                     starved.value.starved, starved.value.attempts)
    assert verdict.inconclusive and verdict.observed.startswith(f"unreachable: {LOOK_TIMEOUT} — it timed out")


async def test_a_look_refused_under_a_stall_or_timed_out_on_a_cluster_is_judged_as_it_came() -> None:
    process_monitor()
    await asyncio.sleep(0.2)
    refused = "cannot reach 127.10.0.1:22 over SSH: [Errno 111] Connect call failed"
    for failures, lab in [([(refused, 1.3)], True), ([(LOOK_TIMEOUT, 1.3)], False), ([(LOOK_TIMEOUT, 0.0)], True)]:
        stand_in, looks = _looker(failures, lab)
        with pytest.raises(NodeError) as failed:
            await Conformance._look(stand_in, "127.10.0.1")  # type: ignore[arg-type]
        assert not isinstance(failed.value, StarvedLook) and looks.looked == 1, (failures, lab)
