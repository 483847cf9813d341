"""Driving a scenario and judging the nodes after each step, reconciler-agnostic.

A scenario acts only as a cluster administrator would (``set_proxy``, ``set_trusted_ca``,
``add_instances`` …, all through the ``kubernetes`` client) and, around each action, ``step``:

1. marks the evidence (proxy flow logs, origin access logs, firewall violations, boots, outages);
2. runs the action and waits until the cluster has published it (Proxy status follows the spec,
   the merged trusted bundle holds exactly the user CA);
3. waits, with a deadline, until every node shows the cluster's settings over SSH, its egress
   services restarted if its proxy variables changed, its Node is Ready and schedulable — and that this
   holds for a quiet period (so a no-op step gives a reconciler time to do something wrong;
   ``converging``);
4. runs every check on every node and records a ``CheckResult`` (node, check, expected, observed).

The judge reads the API and probes the nodes over SSH itself; everything else comes through one
seam, an ``EvidenceSource`` (``evidence``): ``LabEvidence`` on the embedded lab
(``Conformance(lab)``), ``ClusterEvidence`` on an existing cluster (``Conformance(None,
cluster=ClusterTarget)``), where each check that needs what only the lab can show reports
``skipped`` with the reason (``LAB_ONLY``). The checks are pure functions (``checks``); no check
reads a simulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import enum
import itertools
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import (
    OPERATOR_NAMESPACE,
    OPERATOR_REBOOT_TIMEOUT,
    RECONCILER_RESYNC_PERIOD,
    TRUSTED_CA,
    USER_CA_BUNDLE,
)
from proxyfleet.core.gcpauses import process_gc_pauses
from proxyfleet.core.kubeconfig import KubeconfigError, api_client, internal_api_url
from proxyfleet.core.looplag import poll_until, process_monitor
from proxyfleet.core.nodessh import HostKeyMismatch, NodeError, Unreachable
from proxyfleet.core.noproxy import redact_url
from proxyfleet.harness.conformance import checks, clusterobjects, credentialscan, linuxchecks, linuxprobe, routing
from proxyfleet.harness.conformance.checks import env_text
from proxyfleet.harness.conformance.clusterevidence import ClusterEvidence
from proxyfleet.harness.conformance.clusterobjects import node_name
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.converging import (
    FRESH_READS,
    Looks,
    converge,
    node_problems,
    revision_claims,
)
from proxyfleet.harness.conformance.cordons import CordonTimeline, cordoned_spans
from proxyfleet.harness.conformance.deadlines import (
    LIVE_CHANGE_S,
    Deadline,
    RolloutTimings,
    StepPlan,
    step_deadline,
    stuck_deadline,
)
from proxyfleet.harness.conformance.evidence import (
    LAB_ONLY,
    TRAFFIC_CHECKS,
    UNCONFIGURED,
    Evidence,
    EvidenceSource,
    HostRecord,
    ProbedDestination,
    Step,
)
from proxyfleet.harness.conformance.expectations import (
    Expected,
    certificates_of,
    expected_from_cluster,
    status_matches_spec,
)
from proxyfleet.harness.conformance.labevidence import LabEvidence
from proxyfleet.harness.conformance.labhosts import LabHost
from proxyfleet.harness.conformance.linuxprobe import LinuxNodeState
from proxyfleet.harness.conformance.probe import NodeProbe, NodeState, PullResult
from proxyfleet.harness.conformance.results import CHECK_FAMILIES, CheckResult, ChecksFailed, Status
from proxyfleet.harness.conformance.routing import ProbeEvidence
from proxyfleet.harness.conformance.sightings import ChangeSightings
from proxyfleet.harness.lab import Lab, admin
from proxyfleet.harness.lab.snapshot import ClusterSnapshot
from proxyfleet.simulators.controlplane.workloads import WORKLOAD_NAMESPACE
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.windows.machine import LAST_STAGE
from proxyfleet.simulators.windows.node import WindowsNode

log = logging.getLogger(__name__)

# How long after a change was seen on a watch (``ChangeSightings``) a reconciler may still act on
# the previous one (its own watch delivers it, it reads it before asking for the restart): a
# restart asked for within it was committed to before the change could be seen. Well under one
# reboot, so a reconciler that applies stale settings after waiting for a reboot slot is still caught.
CHANGE_VISIBLE = dt.timedelta(seconds=1.0)


# A Node left Unknown while the lab starved is looked at again: for at most this long, and once the
# lab's loop has run this long without a stall of half the heartbeat.
REJUDGE_WITHIN = 30.0
REJUDGE_CALM = 3.0
# A stuck node's report comes once the reconciler has waited its reboot timeout, counted from its
# own reboot request (after a drain) and noticed at its own poll (WMCO looks once a minute).
STUCK_REPORT_MARGIN = 60.0
HOLD_NAME = "proxyfleet-drain-hold"  # the pods and budget that hold drains (``drains_held``)
STUCK_REPORT_SHARE = 0.1
REJUDGE_SETTLE = 10.0  # a lease renewal (1 s) and a status post (5 s) of the lab's kubelet, with room
# A pull or fetch that ran out of time while the lab starved is made again, at most this many times in all.
STARVED_ATTEMPTS = 3


# The checks that judge a node's configuration, per kind: each recorded failed for an unreachable node.
CONFIGURATION_CHECKS = {"windows": ("registry-env", "certificates"),
                        "linux": ("service-environment", "units-loaded", "certificates")}

# One look at a node, as its kind is read: PowerShell's on Windows, a POSIX shell's on Linux.
NodeLook = NodeState | LinuxNodeState


def trusted_of(state: NodeLook) -> frozenset[str]:
    """What the node trusts: its Root store (Windows) or its extracted bundle (Linux)."""
    return state.root if isinstance(state, NodeState) else state.trusted


@dataclass(frozen=True)
class Probed:
    """One pull or fetch a member made after a step, and the id it carried (None: none)."""

    result: PullResult
    probe: str | None
    starved: float = 0.0  # the lab's own stall while it ran, when it failed by running out of time
    attempts: int = 1


class StarvedLook(NodeError):
    """A look that ran out of time at every attempt while the lab's own loop stalled (``starved``
    seconds in the last): the node may be fine, the lab could not tell."""

    def __init__(self, failure: NodeError, starved: float, attempts: int) -> None:
        super().__init__(str(failure))
        self.starved = starved
        self.attempts = attempts


SCENARIO_CA_BUNDLE = "corp-ca"  # the trusted bundle's ConfigMap on a cluster installed without one


class Bundle(enum.Enum):
    """``set_proxy(trusted_ca=Bundle.SCENARIOS)``: the ConfigMap the scenarios' bundle is in."""

    SCENARIOS = "the scenarios' bundle"


class LabRequired(RuntimeError):
    """A scenario asked an existing cluster's judge for something only the embedded lab has."""


class Conformance:
    """One scenario against one lab (``Conformance(lab)``) or an existing cluster
    (``Conformance(None, cluster=…)``). ``await start()`` first, ``await close()`` at the end."""

    def __init__(self, lab: Lab | None, scenario: str = "", converge_timeout: float | None = None, quiet: float = 1.0,
                 cluster: ClusterTarget | None = None, reconciler_reboot_timeout: float | None = None,
                 reconciler_resync_period: float | None = None) -> None:
        self._lab = lab
        self.cluster = cluster
        self.scenario = scenario
        # None: each step's deadline follows from what it asks of the fleet (``deadlines``); a number
        # (``--converge-timeout``) overrides that for every step.
        self.converge_timeout = converge_timeout
        # How long the reconciler under test gives a rebooting node before reporting it: a step with
        # a node stuck in its reboot waits that long (and a margin) for the report, never less.
        self.reboot_timeout = reconciler_reboot_timeout if reconciler_reboot_timeout is not None else (
            lab.reconciler_reboot_timeout if lab is not None else OPERATOR_REBOOT_TIMEOUT)
        # How long the reconciler under test takes to look at a node again (its resync period): a
        # node changed out of band waits that long for its repair to begin.
        self.resync_period = reconciler_resync_period if reconciler_resync_period is not None else (
            lab.reconciler_resync_period if lab is not None else RECONCILER_RESYNC_PERIOD)
        self.quiet = quiet
        self.evidence: EvidenceSource
        self._addresses: list[str] = []
        self._ticks = itertools.count()
        # Whose event loop the judge's is: in the lab, everything but the proxies shares it.
        self._process_name = "judge" if lab is None else (
            "lab (control plane, fleet, judge" + (", reconciler)" if lab.reconciler is not None else ")"))
        if lab is not None:
            assert lab.fleet.observer_key is not None
            self.api: client.ApiClient = lab.api()
            linux = lab.fleet.linux_nodes
            # The lab's own key: the nodes tell the judge's looks from the reconciler's (a Windows
            # node's services wait for the reconciler's first look after a boot, never the judge's)
            self.probe = NodeProbe(lab.fleet.observer_key, lab.fleet.port, linux=[n.address for n in linux],
                                   usernames={n.address: n.config.username for n in linux})
            self.evidence = LabEvidence(lab)
            self._addresses = [n.address for n in lab.fleet.every_node]
        else:
            if cluster is None:
                raise ValueError("a judge needs a lab or a cluster")
            self.api = api_client(cluster.kubeconfig, cluster.context)
            self.probe = NodeProbe(cluster.ssh_key(), cluster.ssh_port)  # replaced in start(): users, host keys
            self.evidence = ClusterEvidence(cluster)  # replaced in start(): the API host
        self.cordons = CordonTimeline(self.api)
        self.sightings = ChangeSightings(self.api)
        self.instances: list[str] = []
        # Members configured by their bootstrap data (CAPI machines), in no reconciler's instance list
        self.bootstrapped: set[str] = set()
        # Nodes cordoned by an administrator: by the scenario, or already when the run began
        self.admin_cordoned: set[str] = set()
        self.run_cordoned: set[str] = set()  # those the scenario cordoned (an existing cluster's: to lift)
        self._drifted: set[str] = set()  # nodes changed out of band since the step began
        self.offline: set[str] = set()  # nodes the scenario took off the network
        # The scenario's writes of the cluster's proxy settings: (issued, returned)
        self._writes: list[tuple[dt.datetime, dt.datetime]] = []
        # Nodes whose SSH host key the scenario replaced -> their command count at that moment:
        # a reconciler must refuse them (and say so), not follow the new key.
        self.rekeyed: dict[str, tuple[int, dt.datetime]] = {}
        self.stuck: set[str] = set()  # nodes whose next reboot never ends: to be reported
        self.steps: list[Step] = []
        self.baseline_roots: dict[str, frozenset[str]] = {}
        self.baseline_files: dict[str, frozenset[str]] = {}
        # Nodes whose out-of-the-box Root store and files are not known (an existing cluster that
        # had a proxy when the run began): recorded the first time they converge without a proxy.
        self.unknown_baseline: set[str] = set()
        self._targets: dict[str, Expected] = {}  # what each node should hold now
        self._user_ca: set[str] = set()
        self._old_user_ca: set[str] = set()
        # the openshift-config ConfigMap the scenarios' bundle goes in (``set_trusted_ca``)
        self.trusted_ca_name = SCENARIO_CA_BUNDLE
        # Every proxy credential this scenario (or the lab's install-config) used: none may leak.
        self._secrets: set[str] = set()
        self._credential_cache = credentialscan.ScanCache()  # a step walks only the objects that changed
        if lab is not None:
            for url in (lab.proxy2_url if lab.proxy2 is not None else "",
                        f"http://{lab.settings.proxy_auth}@proxy" if lab.settings.proxy_auth else ""):
                self._secrets |= checks.url_secrets(url)

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def lab(self) -> Lab:
        """The embedded lab (a scenario's lab-only actions); an existing cluster has none."""
        if self._lab is None:
            raise LabRequired("this needs the embedded lab; the run judges an existing cluster")
        return self._lab

    @property
    def on_lab(self) -> bool:
        return self._lab is not None

    @property
    def nodes(self) -> list[WindowsNode]:
        """The lab's Windows nodes (what the scenarios' host-side actions act on)."""
        return list(self.lab.fleet.nodes)

    @property
    def linux_nodes(self) -> list[LinuxNode]:
        """The lab's Linux nodes (``--linux-nodes``): members of every step, judged by their kind's checks."""
        return list(self.lab.fleet.linux_nodes)

    @property
    def every_node(self) -> list[WindowsNode | LinuxNode]:
        """Every node of the lab's fleet, Windows first."""
        return list(self.lab.fleet.every_node)

    @property
    def addresses(self) -> list[str]:
        """Every node the judge looks at: the lab's fleet, or the cluster's instances."""
        return list(self._addresses)

    @property
    def windows_addresses(self) -> list[str]:
        """The Windows nodes among ``addresses``."""
        return [a for a in self._addresses if a not in self.probe.linux]

    def node(self, address: str) -> WindowsNode:
        return self.lab.fleet.node(address)

    def _activity(self, address: str) -> int:
        """A count that grows with everything that can change what a probe of the node shows (the
        evidence source's); where it offers none, every look is a new one."""
        activity = self.evidence.activity(address)
        return next(self._ticks) if activity is None else activity

    async def start(self) -> None:
        """Record each node's out-of-the-box Root store and start watching cordons."""
        if self.cluster is not None:
            await self._start_on_cluster(self.cluster)
        states = await asyncio.gather(*(self._observe_retrying(a) for a in self._addresses))
        self.baseline_roots = {a: trusted_of(s) for a, s in zip(self._addresses, states, strict=True)}
        self.baseline_files = {a: s.files for a, s in zip(self._addresses, states, strict=True)}
        for address in self._addresses:
            self._targets[address] = UNCONFIGURED
        if self._lab is not None and self._lab.settings.install_proxy and self._lab.settings.mitm_ca is not None:
            # installed with the proxy: its bundle is the installer's ConfigMap, which a later
            # change edits (an administrator does not move the cluster onto a new one)
            self._user_ca = set(certificates_of(self._lab.user_ca_pem()))
            self.trusted_ca_name = USER_CA_BUNDLE
        if self.cluster is not None:
            await self._cluster_baselines(self.cluster)
            # A cordon already there when the run begins is an administrator's, and must survive
            # the run like one the scenario sets.
            nodes = await self._node_objects()
            self.admin_cordoned = {a for a in self._addresses
                                   if ((nodes.get(a) or {}).get("spec") or {}).get("unschedulable")}
        self.cordons.start()
        self.sightings.start()

    async def _cluster_baselines(self, cluster: ClusterTarget) -> None:
        """On a cluster without a proxy what the nodes hold now is their own, and is kept for the
        run's later scenarios; on one with a proxy their Root stores hold its bundle beside
        certificates of their own (often the same public roots), which cannot be told apart: the
        baseline is an earlier scenario's, or else recorded once they converge without a proxy."""
        current = await expected_from_cluster(self.api)
        saved = cluster.read_baselines()
        if not current.configured:
            cluster.save_baselines({a: (self.baseline_roots[a], self.baseline_files[a]) for a in self._addresses})
            return
        for address in self._addresses:
            self._targets[address] = current
            if address in saved:
                self.baseline_roots[address], self.baseline_files[address] = saved[address]
            else:
                self.unknown_baseline.add(address)

    async def _start_on_cluster(self, cluster: ClusterTarget) -> None:
        """The instances (``--instance``, written to windows-instances, or the cluster's own) and the
        Linux workers named beside them (``--linux-instance``: the platform configures them, so they
        are members of every step and written nowhere), SSH to them with their users and known host
        keys, and the API host nodes use."""
        if cluster.instances:
            await admin.set_instances(self.api, list(cluster.instances.items()), cluster.namespace)
            users = dict(cluster.instances)
        else:
            users = await admin.instances(self.api, cluster.namespace)
        if not users:
            raise AssertionError(f"no Windows instance to judge: {cluster.namespace}/windows-instances is empty "
                                 "or missing, and no --instance was given")
        users = {**users, **cluster.linux_instances}
        self._addresses = list(users)
        self.instances = list(users)
        await self.probe.close()
        # Keys pinned by the run's earlier scenarios bind this one: a node showing another since
        # (someone in the middle, a reinstalled host) is refused, never pinned afresh.
        self.probe = NodeProbe(cluster.ssh_key(), cluster.ssh_port, usernames=users,
                               host_keys=cluster.host_key_pins(self._addresses),
                               strict_host_keys=cluster.known_hosts is not None, on_pin=cluster.save_host_key,
                               linux=list(cluster.linux_instances), unit_files=True)
        try:
            url = await asyncio.to_thread(internal_api_url, self.api)
            api_host = urllib.parse.urlsplit(url).hostname or ""
        except (KubeconfigError, ApiException):  # not OpenShift: the API host goes unnamed
            api_host = ""
        self.evidence = ClusterEvidence(cluster, (api_host,) if api_host else ())

    async def close(self) -> None:
        self.cordons.stop()
        self.sightings.stop()
        await self.probe.close()

    async def _observe_retrying(self, address: str, within: float = 30.0) -> NodeLook:
        """Observe ``address``, asking again for ``within`` seconds while it cannot be reached; the
        last error when it never could be. The time is moved by the lab's own stall and by the time
        its looks queued for a probe slot behind other nodes' (at 1,000 nodes a first look's turn
        comes after a minute or more: that wait is the judge's, not the node's)."""
        queued = self.probe.queued(address)
        seen: list[NodeLook] = []
        errors: list[NodeError] = []

        async def observed() -> bool:
            try:
                seen.append(await self.probe.look(address))
            except HostKeyMismatch:
                raise  # no reboot brings the pinned key back: asking again only delays the report
            except NodeError as exc:
                errors.append(exc)
                return False
            return True

        if not await poll_until(observed, within, 0.2, excused=lambda: self.probe.queued(address) - queued):
            raise errors[-1]
        return seen[0]

    @property
    def results(self) -> list[CheckResult]:
        return [r for s in self.steps for r in s.results]

    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "failed"]

    def assert_passed(self) -> None:
        """Fail the scenario (pytest) with every failed check, one per line."""
        failures = self.failures()
        if failures:
            lines = "\n".join(f"  {f.describe()}" for f in failures[:50])
            more = f"\n  … and {len(failures) - 50} more" if len(failures) > 50 else ""
            raise ChecksFailed(f"{len(failures)} conformance check(s) failed:\n{lines}{more}")

    def timeline(self) -> list[dict[str, Any]]:
        """Per step: seconds each node took to converge, and the environment nodes were given
        (credentials redacted)."""
        return [{"step": s.name, "converged_s": {a: round(t, 3) for a, t in sorted(s.converged.items())},
                 "nodes": len(s.members) + len(s.deconfigured), "lag_s": s.lag, **({"note": s.note} if s.note else {}),
                 **({"deadline_s": s.deadline.seconds, "deadline": s.deadline.basis,
                     "deadline_moved_s": round(s.moved, 3)} if s.deadline else {}),
                 "environment": {k: redact_url(v) for k, v in s.expected.environment.items()}}
                for s in self.steps]

    # --- what an administrator does (cluster API only) --------------------------------------------

    async def add_instances(self, nodes: Iterable[WindowsNode | LinuxNode]) -> None:
        """Hand nodes to the reconciler: Windows nodes in windows-instances, Linux nodes in
        linux-instances (each ConfigMap written only when its kind is among ``nodes``)."""
        added = list(nodes)
        for node in added:
            if node.address not in self.instances:
                self.instances.append(node.address)
        await self._write_instances(added)

    async def add_bootstrapped(self, nodes: Iterable[WindowsNode | LinuxNode]) -> None:
        """Nodes that joined configured by their bootstrap data (CAPI machines' cloud-init), not by
        the reconciler: members of every step from now on, in neither instance list, their target
        the cluster's since their first boot, so a step that changes nothing in the cluster must
        change nothing on them (no restart, no reboot). Their out-of-the-box trust is what they
        trusted at the run's start less the company's CAs (their bootstrap brought those; the
        distribution's own roots stay theirs, whatever later steps do to the bundle)."""
        expected = await self._published()
        for node in nodes:
            address = node.address
            if address not in self.instances:
                self.instances.append(address)
            self.bootstrapped.add(address)
            self._targets[address] = expected
            self.baseline_roots[address] -= frozenset(self._user_ca)

    async def remove_instances(self, nodes: Iterable[WindowsNode | LinuxNode]) -> None:
        removed = list(nodes)
        gone = {n.address for n in removed}
        self.instances = [a for a in self.instances if a not in gone]
        await self._write_instances(removed)

    async def _write_instances(self, changed: list[WindowsNode | LinuxNode]) -> None:
        """Write, from ``instances`` (bootstrapped ones left out), the instance ConfigMap of each
        kind among ``changed``."""
        handed = [a for a in self.instances if a not in self.bootstrapped]
        if any(not isinstance(n, LinuxNode) for n in changed):
            await admin.set_instances(self.api, [(a, "Administrator") for a in handed if a not in self.probe.linux])
        if any(isinstance(n, LinuxNode) for n in changed):
            users = self.probe.usernames
            await admin.set_linux_instances(self.api, [(a, users.get(a, "core")) for a in handed
                                                       if a in self.probe.linux])

    async def cordon(self, addresses: Iterable[str], cordoned: bool = True) -> None:
        """Cordon (or uncordon) nodes as an administrator would (``kubectl cordon``); a reconciler
        must leave that cordon in place. On an existing cluster the run's snapshot notes the cordon
        first, so that the restore lifts it however the run ends."""
        by_address = await self._node_objects()
        for address in addresses:
            found = by_address.get(address)
            if found is None:
                raise AssertionError(f"{address} has no Node to cordon")
            name = found["metadata"]["name"]
            snapshot = self.cluster.snapshot_file if self.cluster is not None else None
            if cordoned and snapshot is not None:
                await asyncio.to_thread(ClusterSnapshot.record_run_cordon, snapshot, name, True)
            await admin.cordon(self.api, name, cordoned)
            if not cordoned and snapshot is not None:
                await asyncio.to_thread(ClusterSnapshot.record_run_cordon, snapshot, name, False)
            (self.admin_cordoned.add if cordoned else self.admin_cordoned.discard)(address)
            (self.run_cordoned.add if cordoned else self.run_cordoned.discard)(address)

    async def lift_run_cordons(self) -> None:
        """Uncordon what the scenario cordoned and left cordoned (a scenario that ended early)."""
        if self.run_cordoned:
            await self.cordon(sorted(self.run_cordoned), cordoned=False)

    async def on_host(self, node: WindowsNode | LinuxNode, script: str) -> None:
        """Change a node out of band, as someone logged on to the host would (over SSH, not
        through the cluster: PowerShell on Windows, reporting ``ok``; a POSIX shell as root on
        Linux, exiting 0): the reconciler is expected to notice at its next resync.

        A node still in its reboot (a step may end before every reboot it started is over) is
        waited for, as that person would — for as long as a correct reconciler may keep a node in
        its reboot, moved by the lab's stall — rather than breaking the scenario."""
        refused: list[Unreachable] = []

        async def reached() -> bool:
            try:
                await self.probe.reach(node.address)
            except Unreachable as exc:  # nothing ran: safe to try again once it is back
                refused.append(exc)
                return False
            return True

        if not await self._within_reboot_wait(reached):
            raise AssertionError(f"{node.address} did not take an SSH session for the out-of-band "
                                 f"change within {self.report_wait():g}s: {refused[-1]}")
        if isinstance(node, LinuxNode):
            status, said = await self.probe.run_as_root(node.address, script)
            if status != 0:
                raise AssertionError(f"the out-of-band change on {node.address} exited {status}: {said[-500:]}")
        else:
            result = await self.probe.run_script(node.address, script)
            if result is not None and not (isinstance(result, dict) and result.get("ok")):
                raise AssertionError(f"the out-of-band change on {node.address} did not report success: {result!r}")
        self._drifted.add(node.address)

    async def take_offline(self, node: WindowsNode | LinuxNode) -> None:
        """Cut a node off the network (its SSH refuses; the machine keeps running). Until it is
        back, steps do not wait for it or judge it, and its target stays what it last held."""
        await node.go_offline()
        self.offline.add(node.address)

    async def bring_online(self, node: WindowsNode | LinuxNode) -> None:
        """End ``take_offline``: the node must then converge like any other."""
        await node.come_online()
        self.offline.discard(node.address)

    def hang_next_reboot(self, node: WindowsNode | LinuxNode) -> None:
        """The node's next reboot never ends: the others must still converge within the budget,
        and the reconciler must report this one."""
        node.hang_next_reboot()
        self.stuck.add(node.address)

    def hang_first_reboot(self) -> None:
        """The first node to go down for a reboot from now on never comes back — whichever the
        reconciler chose, so the stuck node is one of the first of the rollout and the rest of it
        must fit in the budget that node keeps using."""
        def gate(node: WindowsNode | LinuxNode) -> bool:
            for each in self.every_node:
                each.reboot_gate = None
            self.stuck.add(node.address)
            return True

        for node in self.every_node:
            node.reboot_gate = gate

    async def replace_host_key(self, node: WindowsNode | LinuxNode) -> None:
        """Give a node a new SSH host key (the judge trusts the new one; a reconciler must not)."""
        await node.replace_host_key()
        await self.probe.forget(node.address)
        self.rekeyed[node.address] = (LabHost.of(node).commands, dt.datetime.now(dt.UTC))

    @contextlib.asynccontextmanager
    async def drains_held(self) -> AsyncIterator[None]:
        """While inside, every drain that starts from now waits: each node gets one more pod a
        drain must move (placed by the scheduler through ``nodeSelector``, so a node already
        cordoned — a drain under way — gets none and nothing appears behind a finished drain),
        under a PodDisruptionBudget that allows no disruption, so its eviction is refused (429)
        until the way out, where the budget goes first and then the pods (deleted gracefully: no
        disruption is recorded against a budget that no longer exists)."""
        core, policy = client.CoreV1Api(self.api), client.PolicyV1Api(self.api)
        labels = {"app": HOLD_NAME}
        budget = client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name=HOLD_NAME),
            spec=client.V1PodDisruptionBudgetSpec(max_unavailable=0,
                                                  selector=client.V1LabelSelector(match_labels=labels)))
        await asyncio.to_thread(policy.create_namespaced_pod_disruption_budget, WORKLOAD_NAMESPACE, budget)
        created = []
        try:
            nodes = await self._node_objects()
            for node in self.every_node:
                hostname = node_name(nodes, node.address)
                name = f"{HOLD_NAME}-{hostname}"
                pod = client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels=labels), spec=client.V1PodSpec(
                    node_selector={"kubernetes.io/hostname": hostname}, termination_grace_period_seconds=30,
                    containers=[client.V1Container(name="hold", image="mcr.microsoft.com/windows/nanoserver")]))
                await asyncio.to_thread(core.create_namespaced_pod, WORKLOAD_NAMESPACE, pod)
                created.append(name)
            yield
        finally:
            await asyncio.to_thread(policy.delete_namespaced_pod_disruption_budget, HOLD_NAME, WORKLOAD_NAMESPACE)
            for name in created:
                with contextlib.suppress(ApiException):  # evicted meanwhile
                    await asyncio.to_thread(core.delete_namespaced_pod, name, WORKLOAD_NAMESPACE)

    def report_wait(self) -> float:
        """How long a stuck node's report may take: the reconciler's reboot timeout and a margin."""
        return self.reboot_timeout + STUCK_REPORT_MARGIN + STUCK_REPORT_SHARE * self.reboot_timeout

    async def wait_for_report(self, node: WindowsNode | LinuxNode, since: dt.datetime) -> bool:
        """Wait until a Warning Event about ``node`` written since ``since`` exists, for at most
        ``report_wait()`` (moved by the lab's own stall); whether one came."""
        async def reported() -> bool:
            nodes = await self._node_objects()
            return bool((await self._warning_events(since)).get(node_name(nodes, node.address)))

        return await self._within_reboot_wait(reported)

    async def _within_reboot_wait(self, done: Callable[[], Awaitable[bool]]) -> bool:
        """Ask ``done`` every half second until it says yes, for at most ``report_wait()`` — as
        long as a correct reconciler may keep a node in its reboot — moved by the lab's own stall;
        whether it did."""
        return await poll_until(done, self.report_wait(), 0.5)

    async def wait_for_a_reboot(self, within: float | None = None) -> WindowsNode | LinuxNode:
        """Return the moment any node goes down (told by the node itself, not found by polling, so
        what the scenario does next happens while that node is down, however loaded the machine)."""
        down: asyncio.Future[WindowsNode | LinuxNode] = asyncio.get_running_loop().create_future()

        def heard(node: WindowsNode | LinuxNode) -> None:
            if not down.done():
                down.set_result(node)

        for node in self.every_node:
            node.down_listeners.append(heard)
        # A first reboot comes after a drain: at 100 nodes under load that took longer than a
        # fixed 30 s. The step's own deadline bounds it, moved by the lab's stall meanwhile.
        limit = within if within is not None else max(30.0, self._planned(len(self.instances)).seconds)
        began, lag = time.monotonic(), process_monitor()
        try:
            while True:
                remaining = limit + lag.stalled(began) - (time.monotonic() - began)
                if remaining <= 0:
                    raise TimeoutError
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(remaining, 1.0)):
                        return await asyncio.shield(down)
        except TimeoutError:
            raise AssertionError(f"gave up after {limit:g}s (and the lab's own stall) waiting for a node to go "
                                 "down for its reboot") from None
        finally:
            for node in self.every_node:
                node.down_listeners.remove(heard)

    async def tamper_trusted_ca(self, delete: bool) -> None:
        """Delete the operator's ``trusted-ca`` ConfigMap, or remove its injection label (what an
        administrator's clean-up script or a GitOps prune does by mistake)."""
        await admin.tamper_trusted_ca(self.api, OPERATOR_NAMESPACE, delete)

    async def set_trusted_ca(self, pems: Iterable[bytes], name: str | None = None) -> None:
        """Publish ``pems`` as the cluster's trusted bundle, in ConfigMap ``name`` (default
        ``trusted_ca_name``)."""
        bundle = b"".join(pems)
        self._old_user_ca |= self._user_ca
        self._user_ca = set(certificates_of(bundle))
        issued = dt.datetime.now(dt.UTC)
        await admin.set_trusted_ca(self.api, bundle.decode(), name or self.trusted_ca_name)
        self._writes.append((issued, dt.datetime.now(dt.UTC)))

    async def set_proxy(self, url: str = "", no_proxy: str = "", trusted_ca: str | Bundle | None = Bundle.SCENARIOS,
                        https_url: str | None = None) -> None:
        """Set (or with no URL remove) the cluster-wide proxy (``https_url`` defaults to ``url``);
        ``trusted_ca``: the ConfigMap named as its trustedCA (None: none; by default the
        scenarios' own, ``trusted_ca_name``).
        Only the cluster changes: the network's egress firewall is the lab's
        (``Lab.set_egress_firewall``)."""
        https = url if https_url is None else https_url
        self._secrets |= checks.url_secrets(url) | checks.url_secrets(https)
        issued = dt.datetime.now(dt.UTC)
        if isinstance(trusted_ca, Bundle):
            trusted_ca = self.trusted_ca_name
        await admin.set_proxy(self.api, http_proxy=url, https_proxy=https, no_proxy=no_proxy,
                              trusted_ca=trusted_ca or None)
        self._writes.append((issued, dt.datetime.now(dt.UTC)))
        configured = bool(url or https)
        if not configured:
            self._old_user_ca |= self._user_ca
            if not trusted_ca:
                self._user_ca = set()

    # --- a step ----------------------------------------------------------------------------------

    def _mark(self, name: str, deconfigured: list[str]) -> Step:
        return Step(name=name, started=dt.datetime.now(dt.UTC), members=[], deconfigured=deconfigured,
                    before=dict(self._targets), positions=self.evidence.positions())

    async def step(self, name: str, action: Callable[[], Awaitable[None]] | None = None,
                   deconfigure: Iterable[WindowsNode | LinuxNode] = ()) -> list[CheckResult]:
        """Run ``action``, wait for convergence, check every instance (and every node removed in
        this step, for its clean-up). Returns the results (also kept in ``results``)."""
        removed = [n.address for n in deconfigure]
        collections = process_gc_pauses()  # (timed from the first step on, on an existing cluster)
        step = self._mark(name, removed)
        step.claims_before = await revision_claims(self.api)
        self.steps.append(step)
        if action is not None:
            await action()
        step.drifted, self._drifted = self._drifted, set()
        step.members = [a for a in self.instances
                        if a not in self.offline and a not in self.rekeyed and a not in self.stuck]
        step.stuck = [a for a in self.instances if a in self.stuck]
        step.absent = [a for a in self.instances if a in self.offline]
        step.rekeyed = [a for a in self.instances if a in self.rekeyed]
        step.expected = await self._published()
        for address in step.members:  # an absent node keeps the target it last held
            self._targets[address] = step.expected
        for address in removed:
            self._targets[address] = UNCONFIGURED
        problems = await self._converge(step)
        await self._verify(step, problems)
        await self._rejudge_starved(step)
        own = process_monitor()
        # of the stalls, how long the garbage collector held this process (the rest: the machine, the lab's work)
        step.lag = {self._process_name: {"worst_s": round(own.worst(step.clock), 3),
                                         "stalled_s": round(own.stalled(step.clock), 3),
                                         "gc_s": round(collections.paused(step.clock), 3),
                                         "gc_worst_s": round(collections.worst(step.clock), 3)},
                    **await self.evidence.lags(step.clock)}
        return step.results

    async def _published(self, within: float = 30.0) -> Expected:
        """The cluster's node target once Proxy status and the merged bundle reflect the last change."""
        deadline = time.monotonic() + within
        while True:
            expected = await expected_from_cluster(self.api)
            bundle = set(expected.bundle)
            caught_up = status_matches_spec(expected) and (
                not expected.configured
                or (self._user_ca <= bundle and not ((self._old_user_ca - self._user_ca) & bundle)))
            if caught_up:
                return expected
            if time.monotonic() > deadline:
                raise AssertionError(f"the cluster did not publish the change within {within}s "
                                     f"(Proxy status: {env_text(expected.environment)})")
            await asyncio.sleep(0.1)

    def _starved(self, step: Step) -> float:
        """The longest stall of the lab's own event loop since the step began — where the kubelets
        are the lab's, on that loop (a real cluster's are not: 0)."""
        return process_monitor().worst(step.clock) if self._lab is not None else 0.0

    async def _rejudge_starved(self, step: Step, settle: float = REJUDGE_SETTLE) -> None:
        """Look again, once the lab has recovered, at each Node left Unknown while the lab starved
        (``node-ready`` inconclusive): Ready again, it passes (the lab's kubelet had its turn);
        still Unknown with the lab calm, it fails; still Unknown with the lab still starved, it
        stays inconclusive. The wait is bounded (moved by the lab's own stall meanwhile): a Node
        still Unknown is given ``settle`` seconds of a calm lab (a lease renewal and a status post
        of the lab's kubelet) before it is judged."""
        pending = [i for i, r in enumerate(step.results) if r.check == "node-ready" and r.status == "inconclusive"]
        if not pending:
            return
        monitor = process_monitor()
        earlier = monitor.worst(step.clock)
        began = time.monotonic()
        addresses = {step.results[i].node for i in pending}
        while True:
            nodes = await self._node_objects()
            calm = await self._lab_calm()
            ready = all(checks.node_problem(nodes.get(a), a in self.admin_cordoned) is None for a in addresses)
            waited = time.monotonic() - began
            if (calm and (ready or waited > settle)) or waited > REJUDGE_WITHIN + monitor.stalled(began):
                break
            await asyncio.sleep(0.5)
        api_host = self.evidence.api_hosts[0] if self.evidence.api_hosts else "the API server"
        for index in pending:
            result = step.results[index]
            verdict = checks.node_ready(nodes.get(result.node), 0, api_host, result.node in self.admin_cordoned,
                                        monitor.worst(began))
            if verdict.ok:
                verdict = checks.Verdict(True, verdict.expected, "Ready once the lab's own event loop recovered "
                                                                 f"(it had stalled up to {earlier:.1f} s)")
            status: Status = "inconclusive" if verdict.inconclusive else "passed" if verdict.ok else "failed"
            step.results[index] = CheckResult(result.node, result.check, status, verdict.expected, verdict.observed,
                                              step.name)

    def _change(self, step: Step, address: str) -> checks.ChangeKind:
        """What this step did to the node's target (or the node, when it drifted out of band)."""
        before = step.before.get(address, UNCONFIGURED)
        after = self._targets[address]
        if before.environment != after.environment:
            return "environment"
        if frozenset(before.bundle) != frozenset(after.bundle) or address in step.drifted:
            return "live"
        return "none"

    def _expected_root(self, address: str) -> frozenset[str]:
        return self.baseline_roots[address] | frozenset(self._targets[address].bundle)

    def _removed_while_kept(self, step: Step, address: str, host: HostRecord | None) -> frozenset[str]:
        """Root certificates removed from the node during the step although its target held them
        before and after (lab evidence: the store's removal history; none without it). A node the
        scenario itself changed out of band is left to the end state's check."""
        if address in step.drifted or host is None:
            return frozenset()
        removed = host.root_removed
        kept = self._expected_root(address) & (self.baseline_roots[address]
                                               | frozenset(step.before.get(address, UNCONFIGURED).bundle))
        return removed & kept

    async def _node_objects(self) -> dict[str, dict[str, Any]]:
        return await clusterobjects.node_objects(self.api)

    def _state_problem(self, step: Step, address: str, state: NodeLook) -> str | None:
        """The first check the node's look fails of those a node must pass to have converged (its
        kind's configuration, its trust, its services' restart), or None."""
        target = self._targets[address]
        if isinstance(state, NodeState):
            if state.environment != target.environment:
                return "registry-env"
            started = state.services
        else:
            if not linuxchecks.service_environment(state, target.environment).ok:
                return "service-environment"
            if not linuxchecks.units_loaded(state).ok:
                return "units-loaded"
            started = state.started()
        if address not in self.unknown_baseline and trusted_of(state) != self._expected_root(address):
            return "certificates"
        if address in step.members and self._change(step, address) == "environment":
            stale = [s for s, t in started.items() if t is None or t < step.started]
            if stale:
                return "services-restarted"
        return None

    async def _converge(self, step: Step) -> dict[str, str]:
        """Wait until every node of the step holds its target (for ``quiet`` seconds); returns the
        reason each node that never did was still off at the deadline (``converging``)."""
        async def machine(address: str) -> str | None:
            try:
                state = await self.probe.look(address)
            except NodeError as exc:
                return f"unreachable ({exc})"
            return self._state_problem(step, address, state)

        async def node(addresses: list[str]) -> dict[str, str | None]:
            async def read_one(cached: dict[str, Any]) -> dict[str, Any] | None:
                return await admin.node(self.api, str(cached["metadata"]["name"]))

            return await node_problems(
                addresses, self.cordons.node, read_one, self._node_objects,
                lambda a, n: checks.node_problem(n, a in self.admin_cordoned))

        async def settled() -> bool:
            return (not self._anyone_down() and await self._trusted_ca_ok(step)
                    and await self._stuck_reported(step))

        looks = Looks(machine, node, self._activity, lambda among: self._claimed(step, among), self._listening,
                      settled)
        lag = process_monitor()
        within = self._deadline(step)
        began = time.monotonic()
        problems = await converge(looks, step.members, step.deconfigured, self.cordons, step.converged,
                                  self.quiet, within, lag.stalled)
        if step.converged:
            # How far the lab's stalls had moved the deadline when the last node made it: a step that
            # converged late in a starved lab was that much further from failing.
            step.moved = lag.stalled(began, began + max(step.converged.values()))
        return problems

    async def _observe_when_back(self, address: str, failure: NodeError) -> NodeLook | NodeError:
        """Observe ``address`` once its SSH answers again — for as long as a correct reconciler
        may keep a node in its reboot, moved by the lab's stall; ``failure`` if it never does."""
        async def back() -> bool:
            return address in self._listening()

        if not await self._within_reboot_wait(back):
            return failure
        try:
            return await self.probe.look(address)
        except NodeError as exc:
            return exc

    def _timings(self) -> RolloutTimings | None:
        """What the lab's hosts take to reboot and to stop a pod (None on an existing cluster)."""
        if self._lab is None:
            return None
        fleet = self._lab.fleet.settings
        kubelet = fleet.kubelet
        # Back from a reboot: shut down, boot, every service stage, and a lease period of the
        # kubelet (which posts its status as it starts).
        # The stages wait for the reconciler's own first look (its time), at most the hold; the
        # shutdown for the first command of a connection made meanwhile (its time), at most its hold.
        reboot = (fleet.shutdown_delay + fleet.shutdown_hold_seconds + fleet.reboot_duration
                  + fleet.service_hold_seconds
                  + LAST_STAGE * fleet.service_stage_seconds
                  + (kubelet.lease_interval if kubelet is not None else 0.0))
        stop = kubelet.container_stop_seconds if kubelet is not None else 0.0
        return RolloutTimings(reboot, stop, self._lab.settings.settle_delay, LIVE_CHANGE_S)

    def _budget(self) -> int:
        """maxUnavailable: the lab's (an existing cluster's reconciler declares none: 1)."""
        return self._lab.max_unavailable if self._lab is not None else 1

    def _planned(self, rolling: int, drifted: int = 0, live: int = 0) -> Deadline:
        """The deadline of a step that reboots ``rolling`` nodes, changes ``live`` others' trusted
        CAs alone and in which ``drifted`` nodes were changed out of band (``deadlines.step_deadline``)."""
        return step_deadline(StepPlan(rolling, self._budget(), drifted, self.resync_period, live), self._timings(),
                             self.converge_timeout)

    def _deadline(self, step: Step) -> float:
        """The step's deadline: its plan (``_planned``: the members whose proxy variables change,
        in waves of maxUnavailable, and those whose trusted CAs alone change, applied live) or
        ``--converge-timeout``, or — where a node is stuck in its reboot and the reconciler must
        report it — its declared reboot timeout and a margin, if longer (a correct operator reports
        only once it has waited that long). Worked out once and written into the step."""
        if step.deadline:
            return step.deadline.seconds
        changes = [self._change(step, a) for a in step.members]
        rolling = changes.count("environment")
        drifted = sum(1 for a in step.members if a in step.drifted)  # priced as reboots: not live as well
        live = sum(1 for a, change in zip(step.members, changes, strict=True)
                   if change == "live" and a not in step.drifted)
        step.deadline = self._planned(rolling, drifted, live)
        if step.stuck:
            wait = self.report_wait()
            # Without --converge-timeout: the report, then the rest of the rollout (a scenario may
            # hold every drain until the report; a wait for the report alone failed a correct
            # reconciler whose remaining waves came after it on a loaded machine). With it: at
            # least the report wait, never less.
            stuck = (stuck_deadline(StepPlan(rolling, self._budget(), live=live), self._timings(), wait,
                                    len(step.stuck))
                     if self.converge_timeout is None else Deadline(wait, "the stuck node's report", "stuck-report"))
            if stuck.seconds > step.deadline.seconds:
                step.deadline = stuck
                step.note = (f"waits up to {stuck.seconds:g} s: the stuck node's report — the reconciler's reboot "
                             f"timeout ({self.reboot_timeout:g} s) and a margin — then the rest of the rollout")
                log.warning("%s: %s", step.name, step.note)
        return step.deadline.seconds

    async def _claimed(self, step: Step, among: set[str] | None) -> set[str]:
        """Members that claimed the current revision during this step: as the Node watch cache
        shows them (``among`` None: read every poll, so no list of every Node each time), or those
        of ``among`` whose Nodes, read afresh, claim it (``Looks.claimed``). A claim older than the
        step (a node that drifted out of band since it was verified) is stale, not false: its
        repair waits for the reconciler's resync, so it never ends a step early."""
        nodes = self.cordons.nodes() if among is None else await self._fresh_nodes(among)
        return {a for a, revision in await revision_claims(self.api, nodes)
                if a in step.members and (among is None or a in among) and (a, revision) not in step.claims_before}

    async def _fresh_nodes(self, addresses: set[str]) -> list[dict[str, Any]]:
        """The Nodes at ``addresses`` read from the API server: each by name when there are few
        and the watch cache names them all, else one list (``FRESH_READS``)."""
        cached = [self.cordons.node(a) for a in addresses]
        if len(cached) <= FRESH_READS and all(cached):
            read = await asyncio.gather(*(admin.node(self.api, str(n["metadata"]["name"])) for n in cached if n))
            return [n for n in read if n is not None]
        return list((await self._node_objects()).values())

    async def _trusted_ca_verdict(self, step: Step) -> checks.Verdict | None:
        """None when no member has a proxy (nothing to require, and nothing is read)."""
        if not step.expected.configured or not step.members:
            return None
        return checks.trusted_ca(await clusterobjects.trusted_ca_configmap(self.api), frozenset(step.expected.bundle),
                                 f"{OPERATOR_NAMESPACE}/{TRUSTED_CA}")

    async def _trusted_ca_ok(self, step: Step) -> bool:
        verdict = await self._trusted_ca_verdict(step)
        return verdict is None or verdict.ok

    def _anyone_down(self) -> bool:
        """Whether a node is down (not counting those the scenario took down on purpose)."""
        return self.evidence.anyone_down(self.offline | self.stuck)

    def _listening(self) -> set[str]:
        """Nodes whose SSH is up (where not known: all of them; an unreachable one says so itself)."""
        listening = self.evidence.listening()
        return set(self._addresses) if listening is None else listening

    async def _stuck_reported(self, step: Step) -> bool:
        """Every node stuck in its reboot has a Warning Event about it (the step waits for that)."""
        if not step.stuck:
            return True
        nodes = await self._node_objects()
        warnings = await self._warning_events(step.started)
        return all(warnings.get(node_name(nodes, a)) for a in step.stuck)

    # --- checks ----------------------------------------------------------------------------------

    async def _verify(self, step: Step, problems: dict[str, str]) -> None:
        """Observe every node, pull and fetch on every member (concurrently), read the evidence
        source once, then judge each node."""
        marks = self.evidence.marks()
        destinations = self.evidence.destinations()

        async def gather(address: str) -> tuple[NodeLook | NodeError, dict[str, Probed]]:
            try:
                state: NodeLook | NodeError = await self._look(address)
            except StarvedLook as exc:
                state = exc
            except NodeError as exc:
                if address not in step.deconfigured:
                    return exc, {}
                # A removed instance's clean-up can end in a reboot (its services drop the
                # variables) after the look that found its registry and store clean — at
                # 100 nodes its drain made that reboot come later than the quiet period. That
                # reboot is the reconciler's to make: look again once it is back (at once if it
                # is up already; a read, so looking twice changes nothing).
                state = await self._observe_when_back(address, exc)
            pulls = {}
            if address in step.members:
                for destination in destinations:
                    pulls[destination.text] = await self._probe_traffic(address, destination)
            return state, pulls

        addresses = step.members + step.deconfigured
        observed = await asyncio.gather(*(gather(a) for a in addresses))
        await self.evidence.settle()
        evidence = self.evidence.read(step, marks)
        nodes = await self._node_objects()
        leaks = await self._credential_leaks(nodes)
        hosts = evidence.hosts or {}
        if step.rekeyed or step.stuck:
            # One read of the Warning Events, from the earliest moment any of these is judged from.
            earliest = min([step.started] + [self.rekeyed[a][1] for a in step.rekeyed])
            warnings = await self._warning_events(earliest)

            def about(address: str, since: dt.datetime) -> list[str]:
                since = since.replace(microsecond=0)  # Event timestamps have whole seconds
                return [text for when, text in warnings.get(node_name(nodes, address), []) if when >= since]

            for address in step.rekeyed:  # judged from the moment its key changed (maybe an earlier step)
                commands, since = self.rekeyed[address]
                self._record(step, address, "host-key", checks.host_key_refused(
                    hosts[address].commands - commands, about(address, since)))
            for address in step.stuck:
                deadline = self._deadline(step)
                own_wait = step.deadline is not None and step.deadline.kind == "stuck-report"
                self._record(step, address, "reported", checks.stuck_reported(
                    hosts[address].listening, about(address, step.started), deadline,
                    "the reconciler's reboot timeout and a margin" if own_wait
                    else "the step's deadline, at least the reconciler's reboot timeout and a margin"))
        for address in step.absent:
            step.results.append(CheckResult(address, "converged", "skipped", "judged once it is back",
                                            "off the network for this step (the scenario's doing)", step.name))
        trusted = await self._trusted_ca_verdict(step)
        budget = self._disruption_budget(step, addresses + step.stuck, evidence, nodes)
        overtaken = self._overtaken(step, evidence)
        subjects = self._subjects(step)
        for address, (state, pulls) in zip(addresses, observed, strict=True):
            self._verify_node(step, address, problems.get(address), nodes.get(address), state, pulls, evidence,
                              overtaken, subjects)
            if address in step.members:
                self._record(step, address, "disruption-budget", budget(address))
                if trusted is not None:
                    self._record(step, address, "trusted-ca", trusted)
                leaked = leaks.found.get(address, []) + leaks.found.get("", [])
                self._record(step, address, "credentials", checks.credentials(leaked, leaks.unlisted, leaks.skipped))

    async def _probe_traffic(self, address: str, destination: ProbedDestination) -> Probed:
        """One pull or fetch from a member, each attempt with an id of its own (the lab's origins
        log it). In the lab, an attempt that ran out of time while the lab's own event loop stalled
        a second or more says nothing of the route — the node's client, the origins and the
        kubelets all run on that loop (at 300 nodes, 18 pulls of 300 timed out in their TLS
        handshake while it stalled up to 8.7 s): it is made again once the lab has been calm for
        ``REJUDGE_CALM`` seconds, up to ``STARVED_ATTEMPTS`` attempts in all; a last one still
        starved is judged inconclusive (``checks.starved_traffic``), never failed. Against an
        existing cluster the lab's loop carries none of it: one attempt, as it comes."""
        attempt = 0
        while True:
            attempt += 1
            text, probe = self.evidence.probe_target(destination)
            began = time.monotonic()
            result = await (self.probe.pull(address, text) if destination.image else self.probe.fetch(address, text))
            starved = self._timed_out_starved(began, result.output) if not result.ok else 0.0
            if starved < checks.STARVED_SECONDS or attempt >= STARVED_ATTEMPTS:
                return Probed(result, probe, starved, attempt)
            await poll_until(self._lab_calm, REJUDGE_WITHIN, 0.5)

    async def _look(self, address: str) -> NodeLook:
        """The judge's look at a node, made again as ``_probe_traffic`` makes a pull again: in the
        lab, a look that ran out of time (the SSH session's limit, a handshake's) while the lab's
        own loop stalled a second or more — the node's sshd and shell run on that loop — is made
        again once the lab has been calm, up to ``STARVED_ATTEMPTS``; a last one still starved
        raises ``StarvedLook`` (judged inconclusive). Any other failure is raised as it came."""
        attempt = 0
        while True:
            attempt += 1
            began = time.monotonic()
            try:
                return await self.probe.look(address)
            except NodeError as exc:
                starved = self._timed_out_starved(began, str(exc))
                if starved < checks.STARVED_SECONDS:
                    raise
                if attempt >= STARVED_ATTEMPTS:
                    raise StarvedLook(exc, starved, attempt) from exc
            await poll_until(self._lab_calm, REJUDGE_WITHIN, 0.5)

    def _timed_out_starved(self, began: float, failure: str) -> float:
        """How long the lab's own loop stalled since ``began``, if ``failure`` ran out of time in
        the lab (0: it did not, or the nodes are an existing cluster's, off the lab's loop)."""
        return process_monitor().stalled(began) if self._lab is not None and checks.TIMED_OUT.search(failure) else 0.0

    async def _lab_calm(self) -> bool:
        """The lab's own loop ran the last ``REJUDGE_CALM`` seconds without a stall of half a heartbeat."""
        return process_monitor().worst(time.monotonic() - REJUDGE_CALM) < checks.STARVED_SECONDS / 2

    async def _warning_events(self, since: dt.datetime) -> dict[str, list[tuple[dt.datetime, str]]]:
        return await clusterobjects.warning_events(self.api, since)

    @staticmethod
    def _lab_only(check: str) -> checks.Verdict:
        return checks.Verdict.skip(CHECK_FAMILIES[check], LAB_ONLY[check])

    @staticmethod
    def _record(step: Step, address: str, check: str, verdict: checks.Verdict) -> None:
        status: Status = ("skipped" if verdict.skipped else "inconclusive" if verdict.inconclusive
                          else "passed" if verdict.ok else "failed")
        step.results.append(CheckResult(address, check, status, verdict.expected, verdict.observed, step.name))

    def _disruption_budget(self, step: Step, addresses: list[str], evidence: Evidence,
                           nodes: dict[str, dict[str, Any]]) -> Callable[[str], checks.Verdict]:
        """The step's peaks — machines down (the lab's exact outage edges), Nodes cordoned by the
        reconciler (the store's commits where the lab records them, else the watch's order; the
        administrator's cordons are not the reconciler's), and either — judged for each member.
        Without the outage edges or the budget: skipped."""
        if evidence.hosts is None or evidence.budget is None:
            return lambda address: self._lab_only("disruption-budget")
        now = dt.datetime.now(dt.UTC)
        # Outages the scenario caused (a node taken off the network: not in ``addresses``) are not
        # the reconciler's.
        outages = {a: [(o.down_at, o.up_at or now) for o in evidence.hosts[a].outages]
                   for a in addresses if a in evidence.hosts}
        down = checks.peak_unavailable(outages)
        hosts = evidence.hosts

        def cordons_of(address: str) -> list[tuple[dt.datetime, dt.datetime]]:
            # On the outages' clock where the source records it (the lab's store commits): a watch
            # delivers an uncordon late under load, and a late uncordon beside the next node's
            # exact down edge would count two nodes where there was one.
            changes = hosts[address].cordon_changes if address in hosts else None
            if changes is not None:
                return cordoned_spans(changes, step.started, now)
            return self.cordons.intervals(address, step.started, now)

        cordons = {a: cordons_of(a) for a in addresses if a not in self.admin_cordoned}
        cordoned = checks.peak_unavailable(cordons)
        # Down or cordoned, per node: a node stuck in its reboot (down for good) and another the
        # reconciler took meanwhile are two of the budget, whichever way each is unavailable.
        either = checks.peak_unavailable({a: spans + cordons.get(a, []) for a, spans in outages.items()})
        budget, members = evidence.budget, len(step.members)

        def verdict(address: str) -> checks.Verdict:
            kept = None
            if address in self.admin_cordoned:
                kept = bool(((nodes.get(address) or {}).get("spec") or {}).get("unschedulable"))
            return checks.disruption_budget(address, budget, members, down, cordoned, kept, either)

        return verdict

    async def _credential_leaks(self, nodes: dict[str, dict[str, Any]]) -> credentialscan.Scan:
        """Where a proxy credential the scenario used shows up (``clusterobjects.credential_leaks``)."""
        return await clusterobjects.credential_leaks(self.api, nodes, self._secrets, self.evidence.readable_logs,
                                                     existing_cluster=self._lab is None,
                                                     cache=self._credential_cache)

    def _subjects(self, step: Step) -> dict[str, str]:
        """Thumbprint -> subject of every certificate a node's target held before the step or
        holds now (to name what a Root store lacks or has too many of): from each distinct target
        once — a fleet shares a few, and reading every node's for every node was nodes squared times the bundle."""
        distinct = {id(e): e for e in (*step.before.values(), *self._targets.values())}
        return {t: s for e in distinct.values() for t, s in e.bundle.items()}

    def _verify_node(self, step: Step, address: str, problem: str | None, node_object: dict[str, Any] | None,
                     state: NodeLook | NodeError, pulls: dict[str, Probed], evidence: Evidence,
                     overtaken: Callable[[HostRecord], bool], subjects: Mapping[str, str]) -> None:
        """Gather each check's evidence for one node and record the pure checks' verdicts; a check
        whose evidence the source does not have is recorded ``skipped`` with the reason
        (``subjects``: every certificate's subject a target held, ``_subjects``)."""
        fault = self.evidence.lab_fault(address)

        def record(check: str, verdict: checks.Verdict) -> None:
            self._record(step, address, check, checks.lab_failed(verdict, fault))

        target = self._targets[address]
        host = evidence.hosts.get(address) if evidence.hosts is not None else None
        change = self._change(step, address)
        record("converged", checks.converged(problem, step.converged.get(address), self._deadline(step)))
        if isinstance(state, NodeError):
            note = "" if fault else self.evidence.down_note(address)  # (a fault names itself)
            unread = checks.Verdict(False, "a readable node", f"unreachable: {state}" + (f" ({note})" if note else ""))
            if isinstance(state, StarvedLook):
                unread = checks.starved_traffic(unread, state.starved, state.attempts)
            for check in CONFIGURATION_CHECKS["linux" if address in self.probe.linux else "windows"]:
                record(check, unread)
            return
        # The node's configuration, as its kind holds it: on Windows the machine environment (the
        # registry); on Linux what each egress service's process holds (/proc, the node's own
        # evidence) and whether systemd loaded the units as their files are.
        if isinstance(state, NodeState):
            record("registry-env", checks.registry_env(target.environment, state.environment))
        else:
            record("service-environment", linuxchecks.service_environment(state, target.environment))
            record("units-loaded", linuxchecks.units_loaded(state))
        if address in self.unknown_baseline:
            self._verify_without_baseline(address, problem, state, record)
        else:
            if isinstance(state, NodeState):
                record("certificates", checks.certificates(
                    self._expected_root(address), state.root, len(target.bundle), subjects, subjects,
                    self._removed_while_kept(step, address, host)))
            else:
                record("certificates", linuxchecks.certificates(state, self._expected_root(address),
                                                                len(target.bundle)))
            if not target.configured:  # no proxy (any more): nothing of a reconciler's may stay behind
                record("files", checks.leftover_files(state.files, self.baseline_files.get(address, frozenset())))
        if address not in step.members:
            return  # a deconfigured instance: only its clean-up is judged
        started = state.services if isinstance(state, NodeState) else state.started()
        record("services-restarted", checks.services_restarted(change, started, step.started))
        if isinstance(state, NodeState):  # on Linux, judged above from the node's own /proc
            record("service-environment", checks.service_environment(host.service_environments, target.environment)
                   if host is not None else self._lab_only("service-environment"))
        else:
            # the lab's model of the node where there is one, else the node's own files read over SSH
            boot = (host.boot_environments if host is not None else
                    linuxprobe.boot_environments(state) if state.unit_files is not None else None)
            record("unit-environment", linuxchecks.unit_environment(boot, target.environment)
                   if boot is not None else self._lab_only("unit-environment"))
        self._verify_traffic(address, target, pulls, evidence, record)
        api_flows = None
        if evidence.kubelet_via_proxy is not None:  # the lab: the kubelet's own record of its requests
            api_flows = evidence.kubelet_via_proxy.get(address, 0)
        elif evidence.routes_observed and self.evidence.api_hosts:
            api_flows = sum(1 for f in evidence.step_flows.get(address, []) if f.get("host") in self.evidence.api_hosts)
        record("node-ready", checks.node_ready(node_object, api_flows,
                                               self.evidence.api_hosts[0] if self.evidence.api_hosts
                                               else "the API server", address in self.admin_cordoned,
                                               self._starved(step)))
        record("firewall", checks.firewall(checks.firewall_bypasses(evidence.violations.get(address, []),
                                                                    evidence.origin_routes, target.route))
               if evidence.origin_routes is not None else self._lab_only("firewall"))
        if host is None or evidence.hosts is None:
            for check in ("reboots", "drained-while-down", "drained"):
                record(check, self._lab_only(check))
            return
        record("reboots", checks.reboots(host.boots, change, overtaken(host)))
        record("drained-while-down", checks.drained(self._outages(address, host)))
        name = ((node_object or {}).get("metadata") or {}).get("name", "")
        if evidence.budget_bypasses is None:
            record("drained", self._lab_only("drained"))
        else:
            record("drained", checks.evicted([o.pods_at_down for o in host.outages if o.pods_at_down is not None],
                                             evidence.budget_bypasses.get(name, [])))

    def _overtaken(self, step: Step, evidence: Evidence) -> Callable[[HostRecord], bool]:
        """Whether a host's reboot for the step's first change was under way when a later one
        arrived: it may take a second reboot for it; no other node may. "Under way": its restart
        asked for before the later change could reach the reconciler (seen on a watch, plus
        CHANGE_VISIBLE). A "later" change is one written once some node's restart was asked for in
        the step's rollout (a runtime add's two writes, bundle then proxy, before any reboot, are
        one change). The step's first restart and its changes are found once, not per node."""
        first = min((o.asked_at for h in (evidence.hosts or {}).values() for o in h.outages), default=None)
        changes = self._changes(step.started)
        return lambda host: checks.overtaken([o.asked_at for o in host.outages], first, changes, CHANGE_VISIBLE)

    def _changes(self, since: dt.datetime) -> list[checks.Change]:
        """The scenario's writes since ``since``: when each was issued and when it was seen."""
        changes = []
        for index, (issued, returned) in enumerate(self._writes):
            if returned >= since:
                following = self._writes[index + 1][0] if index + 1 < len(self._writes) else None
                changes.append(checks.Change(issued, self.sightings.visible_at(issued, returned, following)))
        return changes

    def _verify_traffic(self, address: str, target: Expected, pulls: dict[str, Probed], evidence: Evidence,
                        record: Callable[[str, checks.Verdict], None]) -> None:
        """Each destination's pull or fetch judged on the route its client takes, by the evidence
        the source has of it; a customer's destinations (repro) as one check."""
        customer = []
        named = set()
        for destination in self.evidence.destinations():
            route = target.route(destination.route_url, destination.client)
            probed = pulls[destination.text]
            seen = self.evidence.traffic(address, destination, route, probed.result, evidence, probed.probe)
            verdict = (routing.judge(destination.text, "pull" if destination.image else "fetch", route, seen)
                       if isinstance(seen, ProbeEvidence) else
                       checks.traffic(destination.text, destination.image, route, seen))
            verdict = checks.starved_traffic(verdict, probed.starved, probed.attempts)
            if destination.check == "destinations":
                customer.append(verdict)
            else:
                named.add(destination.check)
                record(destination.check, verdict)
        for check, option in TRAFFIC_CHECKS.items():
            if check not in named:
                record(check, checks.Verdict.skip(CHECK_FAMILIES[check], f"no destination given ({option})"))
        if customer:
            record("destinations", checks.all_of(customer))

    def _verify_without_baseline(self, address: str, problem: str | None, state: NodeLook,
                                 record: Callable[[str, checks.Verdict], None]) -> None:
        """A node whose own Root store is not known yet: the certificate checks are skipped, and the
        first time it has converged without a proxy what it holds becomes its baseline."""
        reason = ("the node's own Root store and files are not known: the cluster had a proxy when the run "
                  "began (recorded once the node converges without one)")
        for check in ("certificates", "files"):
            record(check, checks.Verdict.skip(CHECK_FAMILIES[check], reason))
        if problem is None and not self._targets[address].configured and self.cluster is not None:
            self.baseline_roots[address], self.baseline_files[address] = trusted_of(state), state.files
            self.unknown_baseline.discard(address)
            self.cluster.save_baselines({address: (trusted_of(state), state.files)})

    def _outages(self, address: str, host: HostRecord) -> list[checks.OutageEvidence]:
        """Each finished reboot with the cordon at its exact edges (the source's) and what the Node
        watch saw in between (the judge's own)."""
        found = []
        for outage in host.outages:
            if outage.up_at is None:
                continue
            ok, text = self.cordons.cordoned_through(address, outage.down_at, outage.up_at)
            found.append(checks.OutageEvidence(outage.at_down, outage.at_up, ok, text))
        return found


__all__ = ["Conformance", "Step"]
