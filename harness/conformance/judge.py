"""Driving a scenario and judging the nodes after each step, reconciler-agnostic.

A scenario acts only as a cluster administrator would (``set_proxy``, ``set_trusted_ca``,
``add_instances`` …, all through the ``kubernetes`` client) and, around each action, ``step``:

1. marks the evidence (proxy flow logs, origin access logs, firewall violations, boots, outages);
2. runs the action and waits until the cluster has published it (Proxy status follows the spec,
   the merged trusted bundle holds exactly the user CA);
3. waits, with a deadline, until every node shows the cluster's settings over SSH, its egress
   services restarted if its settings changed, its Node is Ready and schedulable — and that this
   holds for a quiet period (so a no-op step gives a reconciler time to do something wrong);
4. runs every check on every node and records a ``CheckResult`` (node, check, expected, observed).

Evidence a real cluster would not offer (a service's process environment, the lab's boot and
outage records) comes from the lab; everything else from SSH, the proxies' flow logs and the
origins' access logs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from proxyfleet.core.contract import EGRESS_SERVICES, PROXY_VARIABLES
from proxyfleet.core.nodessh import NodeError
from proxyfleet.core.noproxy import redact_text, redact_url
from proxyfleet.harness.conformance.checks import env_text, service_environment_problems
from proxyfleet.harness.conformance.cordons import CordonTimeline, internal_ip
from proxyfleet.harness.conformance.expectations import (
    Expected,
    Route,
    certificates_of,
    expected_from_cluster,
    status_matches_spec,
)
from proxyfleet.harness.conformance.probe import NodeProbe, NodeState, PullResult
from proxyfleet.harness.conformance.results import CheckResult, Status
from proxyfleet.harness.lab import Lab, admin
from proxyfleet.simulators.origins.catalog import INTERNET_REGISTRY, INTRANET_REGISTRY
from proxyfleet.simulators.proxy.runner import ProxyServer
from proxyfleet.simulators.windows.node import WindowsNode

log = logging.getLogger(__name__)
INTERNET_IMAGE = f"{INTERNET_REGISTRY}/openshift/windows-test:latest"
INTRANET_IMAGE = f"{INTRANET_REGISTRY}/corp/agent:1.0"
UNCONFIGURED = Expected(dict.fromkeys(PROXY_VARIABLES), {}, {})
PROBE_CONCURRENCY = 64


@dataclass
class Evidence:
    """What the proxies and origins saw during a step, read once and grouped by node address."""

    pull_flows: dict[str, list[tuple[ProxyServer, dict[str, Any]]]] = field(default_factory=dict)
    step_flows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # since the step began
    origin_sources: dict[str, dict[str, int]] = field(default_factory=dict)  # host -> source -> requests
    violations: dict[str, list[str]] = field(default_factory=dict)  # source -> refused origins


@dataclass
class Step:
    """One administrator action and what the nodes showed after it."""

    name: str
    started: dt.datetime
    members: list[str]  # node addresses judged as configured instances
    deconfigured: list[str]
    boots: dict[str, int]
    outages: dict[str, int]
    violations: int
    before: dict[str, Expected]
    expected: Expected = UNCONFIGURED
    converged: dict[str, float] = field(default_factory=dict)  # address -> seconds after the action
    results: list[CheckResult] = field(default_factory=list)


class Conformance:
    """One scenario against one lab. ``await start()`` first, ``await close()`` at the end."""

    def __init__(self, lab: Lab, scenario: str = "", converge_timeout: float = 60.0, quiet: float = 1.0) -> None:
        assert lab.fleet is not None and lab.fleet.client_key is not None
        self.lab = lab
        self.scenario = scenario
        self.converge_timeout = converge_timeout
        self.quiet = quiet
        self.api: client.ApiClient = lab.api()
        self.probe = NodeProbe(lab.fleet.client_key, lab.fleet.port)
        self.cordons = CordonTimeline(self.api)
        self.instances: list[str] = []
        self.steps: list[Step] = []
        self.baseline_roots: dict[str, frozenset[str]] = {}
        self._targets: dict[str, Expected] = {}  # what each node should hold now
        self._user_ca: set[str] = set()
        self._old_user_ca: set[str] = set()

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[WindowsNode]:
        assert self.lab.fleet is not None
        return list(self.lab.fleet.nodes)

    def node(self, address: str) -> WindowsNode:
        assert self.lab.fleet is not None
        return self.lab.fleet.node(address)

    async def start(self) -> None:
        """Record each node's out-of-the-box Root store and start watching cordons."""
        states = await asyncio.gather(*(self._observe_retrying(n.address) for n in self.nodes))
        self.baseline_roots = {n.address: s.root for n, s in zip(self.nodes, states, strict=True)}
        for node in self.nodes:
            self._targets[node.address] = UNCONFIGURED
        if self.lab.settings.install_proxy and self.lab.settings.mitm_ca is not None:
            self._user_ca = set(certificates_of(self.lab.settings.mitm_ca.cert_pem.bytes()))
        self.cordons.start()

    async def close(self) -> None:
        self.cordons.stop()
        await self.probe.close()

    async def _observe_retrying(self, address: str, within: float = 30.0) -> NodeState:
        deadline = time.monotonic() + within
        while True:
            try:
                return await self.probe.observe(address)
            except NodeError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

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
            raise AssertionError(f"{len(failures)} conformance check(s) failed:\n{lines}{more}")

    def timeline(self) -> list[dict[str, Any]]:
        """Per step: seconds each node took to converge, and the environment nodes were given
        (credentials redacted)."""
        return [{"step": s.name, "converged_s": {a: round(t, 3) for a, t in sorted(s.converged.items())},
                 "nodes": len(s.members) + len(s.deconfigured),
                 "environment": {k: redact_url(v) for k, v in s.expected.environment.items()}}
                for s in self.steps]

    # --- what an administrator does (cluster API only) --------------------------------------------

    async def add_instances(self, nodes: Iterable[WindowsNode]) -> None:
        for node in nodes:
            if node.address not in self.instances:
                self.instances.append(node.address)
        await admin.set_instances(self.api, [(a, "Administrator") for a in self.instances])

    async def remove_instances(self, nodes: Iterable[WindowsNode]) -> None:
        gone = {n.address for n in nodes}
        self.instances = [a for a in self.instances if a not in gone]
        await admin.set_instances(self.api, [(a, "Administrator") for a in self.instances])

    async def set_trusted_ca(self, pems: Iterable[bytes], name: str = "corp-ca") -> None:
        bundle = b"".join(pems)
        self._old_user_ca |= self._user_ca
        self._user_ca = set(certificates_of(bundle))
        await admin.set_trusted_ca(self.api, bundle.decode(), name)

    async def set_proxy(self, url: str = "", no_proxy: str = "", trusted_ca: str | None = "corp-ca",
                        https_url: str | None = None) -> None:
        """Set (or with no URL remove) the cluster-wide proxy (``https_url`` defaults to ``url``).
        Only the cluster changes: the network's egress firewall is the lab's
        (``Lab.set_egress_firewall``)."""
        https = url if https_url is None else https_url
        await admin.set_proxy(self.api, http_proxy=url, https_proxy=https, no_proxy=no_proxy,
                              trusted_ca=trusted_ca or None)
        configured = bool(url or https)
        if not configured:
            self._old_user_ca |= self._user_ca
            if not trusted_ca:
                self._user_ca = set()

    # --- a step ----------------------------------------------------------------------------------

    def _mark(self, name: str, deconfigured: list[str]) -> Step:
        assert self.lab.origins is not None
        return Step(name=name, started=dt.datetime.now(dt.UTC), members=[],
                    deconfigured=deconfigured,
                    boots={n.address: len(n.boots) for n in self.nodes},
                    outages={n.address: len(n.outages) for n in self.nodes},
                    violations=len(self.lab.origins.violations()),
                    before=dict(self._targets))

    async def step(self, name: str, action: Callable[[], Awaitable[None]] | None = None,
                   deconfigure: Iterable[WindowsNode] = ()) -> list[CheckResult]:
        """Run ``action``, wait for convergence, check every instance (and every node removed in
        this step, for its clean-up). Returns the results (also kept in ``results``)."""
        removed = [n.address for n in deconfigure]
        step = self._mark(name, removed)
        self.steps.append(step)
        if action is not None:
            await action()
        step.members = list(self.instances)
        step.expected = await self._published()
        for address in step.members:
            self._targets[address] = step.expected
        for address in removed:
            self._targets[address] = UNCONFIGURED
        problems = await self._converge(step)
        await self._verify(step, problems)
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

    def _changed(self, step: Step, address: str) -> bool:
        before = step.before.get(address, UNCONFIGURED)
        after = self._targets[address]
        return before.node_target() != after.node_target()

    def _expected_root(self, address: str) -> frozenset[str]:
        return self.baseline_roots[address] | frozenset(self._targets[address].bundle)

    async def _node_objects(self) -> dict[str, dict[str, Any]]:
        """Node objects by InternalIP."""
        found: dict[str, dict[str, Any]] = {}
        for node in await admin.nodes(self.api):
            address = internal_ip(node)
            if address is not None:
                found[address] = node
        return found

    def _state_problem(self, step: Step, address: str, state: NodeState) -> str | None:
        target = self._targets[address]
        if state.environment != target.environment:
            return "registry-env"
        if state.root != self._expected_root(address):
            return "certificates"
        if address in step.members and self._changed(step, address):
            stale = [s for s, t in state.services.items() if t is None or t < step.started]
            if stale:
                return "services-restarted"
        return None

    async def _converge(self, step: Step) -> dict[str, str]:
        """Wait until every node of the step holds its target (for ``quiet`` seconds); returns the
        reason each node that never did was still off at the deadline."""
        addresses = step.members + step.deconfigured
        started = time.monotonic()
        deadline = started + self.converge_timeout
        semaphore = asyncio.Semaphore(PROBE_CONCURRENCY)

        async def look(address: str) -> str | None:
            async with semaphore:
                try:
                    state = await self.probe.observe(address)
                except NodeError as exc:
                    return f"unreachable ({exc})"
            return self._state_problem(step, address, state)

        async def probe(batch: list[str]) -> dict[str, str]:
            results = await asyncio.gather(*(look(a) for a in batch))
            nodes = await self._node_objects() if step.members else {}
            found: dict[str, str] = {}
            for address, problem in zip(batch, results, strict=True):
                if problem is None and address in step.members:
                    problem = _node_problem(nodes.get(address))
                if problem is None:
                    step.converged.setdefault(address, time.monotonic() - started)
                else:
                    found[address] = problem
                    step.converged.pop(address, None)
            return found

        # A node that looks converged is not probed again until all do; after the quiet period
        # one pass over every node confirms it (a late change sends a node back to pending).
        pending = list(addresses)
        quiet_from = 0.0
        while True:
            if pending:
                problems = await probe(pending)
                pending = list(problems)
                quiet_from = time.monotonic()
            else:
                problems = await probe(addresses)
                if not problems and not self._anyone_down():
                    return {}
                pending = list(problems)
                quiet_from = time.monotonic()
            now = time.monotonic()
            if now > deadline:
                return problems
            await asyncio.sleep(0.2 if pending else max(0.05, quiet_from + self.quiet - now))

    def _anyone_down(self) -> bool:
        return any(not n.is_listening for n in self.nodes)

    # --- checks ----------------------------------------------------------------------------------

    async def _verify(self, step: Step, problems: dict[str, str]) -> None:
        """Observe every node and pull on every member (concurrently), read the proxies' and
        origins' logs once, then judge each node."""
        marks = self._evidence_marks()
        semaphore = asyncio.Semaphore(PROBE_CONCURRENCY)

        async def gather(address: str) -> tuple[NodeState | NodeError, dict[str, PullResult]]:
            async with semaphore:
                try:
                    state: NodeState | NodeError = await self.probe.observe(address)
                except NodeError as exc:
                    return exc, {}
                pulls = {}
                if address in step.members:
                    for image in (INTERNET_IMAGE, INTRANET_IMAGE):
                        pulls[image] = await self.probe.pull(address, image)
                return state, pulls

        addresses = step.members + step.deconfigured
        observed = await asyncio.gather(*(gather(a) for a in addresses))
        evidence = self._read_evidence(step, marks)
        nodes = await self._node_objects()
        for address, (state, pulls) in zip(addresses, observed, strict=True):
            self._verify_node(step, address, problems.get(address), nodes.get(address), state, pulls, evidence)

    def _evidence_marks(self) -> dict[str, int]:
        assert self.lab.origins is not None
        marks = {f"proxy:{id(p)}": len(p.flows()) for p in self._proxies()}
        for host in (INTERNET_REGISTRY, INTRANET_REGISTRY):
            marks[f"origin:{host}"] = len(self.lab.origins.access_log(host))
        return marks

    def _proxies(self) -> list[ProxyServer]:
        return [p for p in (self.lab.proxy, self.lab.proxy2) if p is not None]

    def _read_evidence(self, step: Step, marks: dict[str, int]) -> Evidence:
        """Each log read once, grouped by the node it came from."""
        assert self.lab.origins is not None
        evidence = Evidence()
        for proxy in self._proxies():
            flows = proxy.flows()
            for flow in flows[marks.get(f"proxy:{id(proxy)}", 0):]:
                evidence.pull_flows.setdefault(str(flow["client"]), []).append((proxy, flow))
            for flow in flows:
                if dt.datetime.fromisoformat(str(flow["time"])) >= step.started:
                    evidence.step_flows.setdefault(str(flow["client"]), []).append(flow)
        for host in (INTERNET_REGISTRY, INTRANET_REGISTRY):
            seen = evidence.origin_sources.setdefault(host, {})
            for record in self.lab.origins.access_log(host)[marks[f"origin:{host}"]:]:
                seen[record.source] = seen.get(record.source, 0) + 1
        for violation in self.lab.origins.violations()[step.violations:]:
            evidence.violations.setdefault(violation.source, []).append(violation.origin)
        return evidence

    def _verify_node(self, step: Step, address: str, problem: str | None, node_object: dict[str, Any] | None,
                     state: NodeState | NodeError, pulls: dict[str, PullResult], evidence: Evidence) -> None:
        def record(check: str, ok: bool, expected: str, observed: str) -> None:
            status: Status = "passed" if ok else "failed"
            step.results.append(CheckResult(address, check, status, expected, observed, step.name))

        target = self._targets[address]
        changed = self._changed(step, address)
        seconds = step.converged.get(address)
        record("converged", problem is None, f"settled within {self.converge_timeout:g}s",
               f"settled after {seconds:.2f}s" if problem is None and seconds is not None
               else f"still off at the deadline: {problem}")
        if isinstance(state, NodeError):
            for check in ("registry-env", "certificates"):
                record(check, False, "a readable node", f"unreachable: {state}")
            return
        record("registry-env", state.environment == target.environment, env_text(target.environment),
               env_text(state.environment))
        wanted = self._expected_root(address)
        missing, extra = wanted - state.root, state.root - wanted
        record("certificates", not missing and not extra,
               f"baseline + {len(target.bundle)} bundle certificate(s)",
               "exactly those" if not missing and not extra else
               "; ".join(filter(None, [f"missing {self._names(missing, target)}" if missing else "",
                                       f"unexpected {self._names(extra, step.before.get(address))}" if extra else ""])))
        if address not in step.members:
            return  # a deconfigured instance: only its clean-up is judged
        self._check_services(step, address, state, changed, record)
        self._check_service_environment(address, target, record)
        for image, check in ((INTERNET_IMAGE, "pull-internet"), (INTRANET_IMAGE, "pull-intranet")):
            self._check_pull(address, target, image, check, pulls[image], evidence, record)
        self._check_node_ready(address, node_object, evidence, record)
        self._check_firewall(address, target, evidence, record)
        self._check_reboots(step, address, changed, record)
        self._check_drained(step, address, record)

    def _names(self, thumbprints: Iterable[str], expected: Expected | None) -> str:
        subjects = {**(expected.bundle if expected else {}), **{t: s for e in self._targets.values()
                                                               for t, s in e.bundle.items()}}
        return ", ".join(f"{subjects.get(t, 'certificate')} ({t[:12]}…)" for t in sorted(thumbprints))

    def _check_services(self, step: Step, address: str, state: NodeState, changed: bool,
                        record: Callable[[str, bool, str, str], None]) -> None:
        started = step.started.isoformat(timespec="milliseconds")
        if changed:
            stale = [s for s, t in state.services.items() if t is None or t < step.started]
            record("services-restarted", not stale, f"every egress service started after {started}",
                   "all restarted" if not stale else
                   "not restarted: " + ", ".join(f"{s} (started {_when(state.services[s])})" for s in stale))
        else:
            restarted = [s for s, t in state.services.items() if t is not None and t >= step.started]
            record("services-restarted", not restarted, "no restart (nothing changed on this node)",
                   "none restarted" if not restarted else "restarted: " + ", ".join(restarted))

    def _check_service_environment(self, address: str, target: Expected,
                                   record: Callable[[str, bool, str, str], None]) -> None:
        node = self.node(address)
        wrong = service_environment_problems({s: node.process_environment(s) for s in EGRESS_SERVICES},
                                             target.environment)
        record("service-environment", not wrong, env_text(target.environment),
               "every service" if not wrong else "; ".join(wrong[:3]))

    def _check_pull(self, address: str, target: Expected, image: str, check: str, result: PullResult,
                    evidence: Evidence, record: Callable[[str, bool, str, str], None]) -> None:
        host = image.split("/", 1)[0]
        route: Route = target.route(f"https://{host}/v2/")
        flows = [(proxy, f) for proxy, f in evidence.pull_flows.get(address, []) if f["host"] == host]
        direct = evidence.origin_sources.get(host, {}).get(address, 0)
        outcome = f"pull {'succeeded' if result.ok else 'failed'} ({redact_text(_last_line(result.output))})"
        if route.proxy is not None:
            server = self.lab.proxy_server(route.proxy)
            through = [f for proxy, f in flows if proxy is server]
            via = [f for f in through if f["kind"] == "request" and f["intercepted"] and f["status"] == 200]
            rejected = sum(1 for f in through if f["kind"] == "tls-failed")
            elsewhere = len(flows) - len(through)
            ok = result.ok and bool(via) and not direct and not elsewhere
            observed = ("through the proxy, MITM certificate trusted" if ok else
                        f"{outcome}; {len(via)} intercepted request(s) through that proxy, {elsewhere} flow(s) "
                        f"through another; {rejected} rejected MITM handshake(s); "
                        f"{direct} direct connection(s) at the origin")
            record(check, ok, f"{image} {route.describe()} (origin sees only the proxy)", observed)
        elif self._firewalled(host):
            # No proxy for this destination in a network that demands one: the node must try
            # directly and be refused at the firewall (a proxy flow would be a guess of its own).
            assert self.lab.origins is not None
            refused = self.lab.origins.server(host).name in evidence.violations.get(address, [])
            ok = not result.ok and refused and not flows
            observed = ("direct, refused by the egress firewall" if ok else
                        f"{outcome}; {len(flows)} proxy flow(s) from the node; "
                        f"{'refused' if refused else 'not refused'} at the firewall")
            record(check, ok, f"{image} direct, refused by the egress firewall (no proxy for it)", observed)
        else:
            ok = result.ok and bool(direct) and not flows
            observed = ("direct, the origin saw the node" if ok else
                        f"{outcome}; {len(flows)} proxy flow(s) from the node; origin saw the node {direct} time(s)")
            record(check, ok, f"{image} direct (no proxy flow, origin sees the node)", observed)

    def _firewalled(self, host: str) -> bool:
        """Whether the egress firewall refuses a node's direct connection to ``host``."""
        assert self.lab.origins is not None
        try:
            return self.lab.egress_firewall and self.lab.origins.server(host).kind == "internet"
        except KeyError:
            return False

    def _check_node_ready(self, address: str, node: dict[str, Any] | None, evidence: Evidence,
                          record: Callable[[str, bool, str, str], None]) -> None:
        problem = _node_problem(node)
        assert self.lab.control_plane is not None
        plan = self.lab.control_plane.plan
        api_flows = [f for f in evidence.step_flows.get(address, [])
                     if f.get("host") in (plan.api_internal_host, plan.api_host)]
        ok = problem is None and not api_flows
        record("node-ready", ok, f"Ready, schedulable, no kubelet traffic to {plan.api_internal_host} through a proxy",
               "Ready" if ok else (problem or f"{len(api_flows)} API request(s) went through the proxy"))

    def _check_firewall(self, address: str, target: Expected, evidence: Evidence,
                        record: Callable[[str, bool, str, str], None]) -> None:
        """No direct connection where the cluster names a proxy. A refused direct attempt at a
        destination the cluster sends direct (no proxy yet, or in NO_PROXY) is the network's
        doing, judged by the pull checks, not a bypass."""
        assert self.lab.origins is not None
        hosts = {s.name: s.hosts[0] for s in self.lab.origins.servers}
        refused = [o for o in evidence.violations.get(address, [])
                   if o not in hosts or target.route(f"https://{hosts[o]}/").proxy is not None]
        record("firewall", not refused, "no direct connection where the cluster names a proxy",
               "none" if not refused else f"{len(refused)} refused: " + ", ".join(sorted(set(refused))))

    def _check_reboots(self, step: Step, address: str, changed: bool,
                       record: Callable[[str, bool, str, str], None]) -> None:
        reboots = len(self.node(address).boots) - step.boots[address]
        limit = 1 if changed else 0
        record("reboots", reboots <= limit, f"at most {limit} (settings {'changed' if changed else 'unchanged'})",
               str(reboots))

    def _check_drained(self, step: Step, address: str, record: Callable[[str, bool, str, str], None]) -> None:
        outages = [o for o in self.node(address).outages[step.outages[address]:] if o.up_at is not None]
        if not outages:
            record("drained-while-down", True, "cordoned for every reboot", "no reboot")
            return
        bad = []
        for outage in outages:
            assert outage.up_at is not None
            ok, text = self.cordons.cordoned_through(address, outage.down_at, outage.up_at)
            exact = outage.at_down is not None or outage.at_up is not None
            if exact and outage.at_down is False:
                bad.append("schedulable when it went down")
            elif exact and outage.at_up is False:
                bad.append("schedulable when it came back up")
            # With the lab's exact edges, the watch timeline only adds an uncordon seen in between
            # (its receipt time is never early); without them it is the whole evidence.
            elif not ok and (not exact or "uncordoned" in text):
                bad.append(text)
        record("drained-while-down", not bad, "cordoned for every reboot",
               f"cordoned for all {len(outages)} reboot(s)" if not bad else "; ".join(bad))


def _node_problem(node: dict[str, Any] | None) -> str | None:
    if node is None:
        return "no Node object"
    conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conditions.get("Ready") or {}
    if ready.get("status") != "True":
        return f"Node not Ready ({ready.get('reason', 'no Ready condition')})"
    if (node.get("spec") or {}).get("unschedulable"):
        return "Node cordoned"
    return None


def _when(moment: dt.datetime | None) -> str:
    return moment.isoformat(timespec="milliseconds") if moment else "never"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-240:] if lines else ""  # the tail of an error names its cause


__all__ = ["INTERNET_IMAGE", "INTRANET_IMAGE", "Conformance", "Step", "redact_url"]
