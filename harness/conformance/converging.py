"""Waiting for a step to converge: when the judge looks at each node again, and when it stops.

The loop is the judge's policy alone; what one look is (an SSH probe of the machine, the Node's
conditions, the reconciler's claims) comes from the judge through ``Looks``, so the policy is
tested on its own with plain callables.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import APPLIED, OPERATOR_NAMESPACE
from proxyfleet.core.informer import internal_ip
from proxyfleet.core.rollout import assess, read_snapshot
from proxyfleet.harness.conformance.checks import NODE_NOT_READY
from proxyfleet.harness.conformance.schedule import LookSchedule

# How often a node still off its target is looked at again when no Node changes (a reconciler
# finishing a node marks its Node, and that brings the next look forward): each look is a full
# observation over SSH (registry, Root store, services), which costs the simulated fleet far more
# than a real host.
PENDING_POLL = 0.75
# The longest a node off its target on machine state goes unlooked-at when nothing happens on it
# (``LookSchedule``).
QUIET_NODE_POLL = 3 * PENDING_POLL
NODE_CHANGE_SETTLE = 0.05  # after a Node change wakes the judge (see ``converge``)
# Each pass lists every Node and probes the nodes with new activity, so in a big fleet (where some
# node finishes every few milliseconds) passes woken by Node changes are spaced by the fleet's size.
WAKE_SPACING_PER_NODE = 0.004
# How long a node must stay off its target while its reconciler reports it done before the step
# ends without waiting for the deadline (a correct reconciler writes that claim only after it has
# verified the node, so a claim that holds this long is a definitive failure, not a race).
CLAIM_HOLD = 2.0


def wake_spacing(fleet_size: int) -> float:
    """The least time between the starts of two convergence passes when Node changes wake the
    judge: ``NODE_CHANGE_SETTLE`` for a small fleet, growing with its size, never past
    ``PENDING_POLL`` (a wake never makes the judge look later than its poll would)."""
    return min(PENDING_POLL, max(NODE_CHANGE_SETTLE, fleet_size * WAKE_SPACING_PER_NODE))


class ClaimWatch:
    """Nodes the reconciler reports done while the judge sees them off their target."""

    def __init__(self, hold: float = CLAIM_HOLD) -> None:
        self.hold = hold
        self.since: dict[str, float] = {}

    def update(self, problems: dict[str, str], claimed: set[str], up: set[str]) -> set[str]:
        """Record one look; returns the nodes whose claim has been refuted for ``hold`` seconds.
        An unreachable or down node refutes nothing (it may be mid-reboot), nor does a Node that
        is not Ready: its kubelet's heartbeat is not the reconciler's claim, and on a loaded
        machine one comes late (a kubelet the reconciler broke is still judged at the deadline)."""
        now = time.monotonic()
        wrong = {a for a, p in problems.items() if a in claimed and a in up
                 and not p.startswith(("unreachable", NODE_NOT_READY))}
        self.since = {a: self.since.get(a, now) for a in wrong}
        return {a for a, t in self.since.items() if now - t >= self.hold}

    def describe(self, address: str, problem: str) -> str:
        if address not in self.since:
            return problem
        return (f"{problem}, while its Node reports the cluster's current settings applied "
                f"({APPLIED}); the step ended without waiting for the deadline")


async def revision_claims(api: client.ApiClient, nodes: list[dict[str, Any]] | None = None) -> set[tuple[str, str]]:
    """(address, revision) for every Node that claims (``proxyfleet.io/applied``) the cluster's
    current revision; a reconciler that writes no such annotation claims nothing. ``nodes``: the
    Nodes to judge (a watch cache's, or Nodes just read by name); default: all, listed afresh. The
    Proxy and the bundles are always read afresh (the revision is theirs)."""
    try:
        snapshot = await asyncio.to_thread(read_snapshot, api, OPERATOR_NAMESPACE, nodes=nodes is None)
    except ApiException:
        return set()
    if nodes is not None:
        snapshot = replace(snapshot, nodes=nodes)
    found = assess(snapshot)
    if found.revision is None:
        return set()
    done = set(found.done)
    return {(a, found.revision) for n in snapshot.nodes
            if (n.get("metadata") or {}).get("name") in done and (a := internal_ip(n)) is not None}


# Up to this many Nodes that look on target are each read afresh by name; more are read with one
# list (at 1,000 nodes a list every pass was most of the judge's work: per-step costs should grow
# with the nodes that changed).
FRESH_READS = 8

NodeObject = dict[str, Any]


async def node_problems(addresses: list[str], cached: Callable[[str], NodeObject | None],
                        read_one: Callable[[NodeObject], Awaitable[NodeObject | None]],
                        read_all: Callable[[], Awaitable[dict[str, NodeObject]]],
                        problem: Callable[[str, NodeObject | None], str | None]) -> dict[str, str | None]:
    """The Node problem of each of ``addresses`` (``problem``: None when on target).

    A Node the watch cache (``cached``) shows off its target is off: a stale cache only delays the
    verdict, since the Node's next change wakes the judge again. A Node it shows on target — or does
    not show — counts only once read afresh from the API server (``read_one`` by the cached object,
    for up to ``FRESH_READS`` of them; else one ``read_all``, by address), so no node is found on
    target from a cache that may lag."""
    found: dict[str, str | None] = {}
    fresh: dict[str, NodeObject] = {}
    for address in addresses:
        node = cached(address)
        off = problem(address, node) if node is not None else None
        if off is not None:
            found[address] = off
        elif node is not None:
            fresh[address] = node
        else:
            fresh[address] = {}
    if not fresh:
        return found
    if len(fresh) > FRESH_READS or not all(fresh.values()):
        every = await read_all()
        read = {a: every.get(a) for a in fresh}
    else:
        nodes = await asyncio.gather(*(read_one(n) for n in fresh.values()))
        read = dict(zip(fresh, nodes, strict=True))
    found.update({a: problem(a, n) for a, n in read.items()})
    return found


class NodeChanges(Protocol):
    """Wakes the loop when a Node changes (``CordonTimeline``)."""

    nodes_changed: asyncio.Event

    async def wait_for_node_change(self, within: float) -> bool: ...


@dataclass(frozen=True)
class Looks:
    """What one step's wait asks of the judge.

    ``machine``: the node's problem on its own machine state, or None (``"unreachable (…)"`` when
    it cannot be read); ``node``: the problems of the Node objects of members whose machines are
    right (one API read for them all); ``activity``: a count that grows with anything that could
    change what ``machine`` shows; ``claimed(among)``: members the reconciler reports done in this
    step — with ``among`` None, as the Node watch cache shows them (a candidate, read every poll:
    it may lag), else those of ``among`` whose claim holds on Nodes read afresh (read before a step
    ends on claims);
    ``listening``: nodes whose SSH is up; ``settled``: whatever else must hold before the step ends
    (nobody down, the trusted CA ConfigMap right, stuck nodes reported)."""

    machine: Callable[[str], Awaitable[str | None]]
    node: Callable[[list[str]], Awaitable[dict[str, str | None]]]
    activity: Callable[[str], int]
    claimed: Callable[[set[str] | None], Awaitable[set[str]]]
    listening: Callable[[], set[str]]
    settled: Callable[[], Awaitable[bool]]


async def converge(looks: Looks, members: list[str], others: list[str], changes: NodeChanges,
                   converged: dict[str, float], quiet: float, within: float,
                   stalled: Callable[[float], float] = lambda since: 0.0) -> dict[str, str]:
    """Wait, at most ``within`` seconds, until every node (``members``, then ``others`` whose
    Nodes are not judged) holds its target for ``quiet`` seconds; returns the reason each node that
    never did was still off at the deadline, or sooner when every node still off is one the
    reconciler reports done (``ClaimWatch``). ``converged`` gets, per node, the seconds it took.

    The deadline moves by ``stalled(since)``, the seconds the lab's own event loop could not run
    since the wait began (its lag: ``core/looplag``): time in which nothing of the lab's moved —
    its simulated hosts, its control plane, the judge itself, the reference reconciler beside
    them — is not time the reconciler had. Its own slowness is never excused."""
    addresses = members + others
    started = time.monotonic()
    deadline = started + within
    schedule = LookSchedule(QUIET_NODE_POLL)

    async def look(address: str) -> str | None:
        activity = looks.activity(address)
        try:
            return await looks.machine(address)  # the probe bounds how many are in flight
        finally:
            schedule.looked(address, activity)

    async def probe(batch: list[str], known: dict[str, str] | None = None) -> dict[str, str]:
        """Problems of the nodes in ``batch``; with ``known`` (their last problems), a node with
        nothing new since its last look keeps its problem without a probe."""
        unchanged = {a: p for a, p in (known or {}).items()
                     if a in batch and not schedule.due(a, p, looks.activity(a))}
        batch = [a for a in batch if a not in unchanged]
        results = dict(zip(batch, await asyncio.gather(*(look(a) for a in batch)), strict=True))
        right = [a for a, problem in results.items() if problem is None and a in members]
        if right:
            results.update(await looks.node(right))
        found: dict[str, str] = {}
        for address, problem in results.items():
            if problem is None:
                converged.setdefault(address, time.monotonic() - started)
            else:
                found[address] = problem
                converged.pop(address, None)
        return {**unchanged, **found}

    # A node that looks converged is not probed again until all do; after the quiet period one
    # pass over every node confirms it (a late change sends a node back to pending).
    pending = list(addresses)
    problems: dict[str, str] = {}
    quiet_from = 0.0
    claims = ClaimWatch()
    next_claims = 0.0
    spacing = wake_spacing(len(addresses))
    while True:
        changes.nodes_changed.clear()  # a Node change during this pass wakes the next wait
        pass_started = time.monotonic()
        if pending:
            problems = await probe(pending, problems)
            pending = list(problems)
            quiet_from = time.monotonic()
            claimed: set[str] | None = None
            if any(a in members for a in pending) and quiet_from >= next_claims:
                # Reading claims parses the trust bundle: at most once per poll period, however
                # often Node changes wake the judge.
                claimed, next_claims = await looks.claimed(None), quiet_from + PENDING_POLL
            if claimed is not None:
                refuted = claims.update(problems, claimed, looks.listening())
                if pending and set(pending) <= refuted and set(pending) <= await looks.claimed(set(pending)):
                    # Every node still off its target is one the reconciler reports done (on a
                    # fresh read, not only in the watch cache): waiting longer only waits for its
                    # next resync. End the step here.
                    return {a: claims.describe(a, p) for a, p in problems.items()}
        else:
            problems = await probe(addresses)
            if not problems and await looks.settled():
                return {}
            pending = list(problems)
            quiet_from = time.monotonic()
        now = time.monotonic()
        deadline = started + within + stalled(started)
        if now > deadline:
            return problems
        if not pending:
            await asyncio.sleep(max(0.05, quiet_from + quiet - now))  # the quiet period itself
        elif await changes.wait_for_node_change(min(PENDING_POLL, max(0.0, deadline - now))):
            # A reconciler finishes a node with a few writes in a row (uncordon, state,
            # annotations): look once they are all in, not after the first.
            await asyncio.sleep(max(NODE_CHANGE_SETTLE, pass_started + spacing - time.monotonic()))
