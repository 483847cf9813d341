"""The judge's wait for a step to converge, as a policy of its own: it ends when every node is
right for the quiet period and the rest has settled, at the deadline with each node's last
problem, or sooner when every node still off is one the reconciler reports done (ClaimWatch);
a node that is down or unreachable refutes no claim. The looks are plain callables here; the
scenarios drive the same loop with SSH probes and the API."""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.core.cancelling import wait_until
from proxyfleet.harness.conformance.converging import (
    CLAIM_HOLD,
    FRESH_READS,
    NODE_CHANGE_SETTLE,
    PENDING_POLL,
    ClaimWatch,
    Looks,
    converge,
    node_problems,
    wake_spacing,
)


def test_a_claim_refuted_long_enough_is_definitive() -> None:
    watch = ClaimWatch(hold=0.0)
    refuted = watch.update({"a": "registry-env", "b": "certificates"}, claimed={"a"}, up={"a", "b"})
    assert refuted == {"a"}  # b is still off, but nobody says it is done
    assert "without waiting for the deadline" in watch.describe("a", "registry-env")
    assert watch.describe("b", "certificates") == "certificates"


def test_a_fresh_claim_is_not_yet_definitive() -> None:
    watch = ClaimWatch(hold=3600.0)
    assert watch.update({"a": "registry-env"}, claimed={"a"}, up={"a"}) == set()
    assert "a" in watch.since


def test_down_or_unreachable_nodes_refute_nothing() -> None:
    watch = ClaimWatch(hold=0.0)
    assert watch.update({"a": "registry-env"}, claimed={"a"}, up=set()) == set()  # mid-reboot
    assert watch.update({"a": "unreachable (connection refused)"}, claimed={"a"}, up={"a"}) == set()


def test_a_node_not_ready_refutes_nothing() -> None:
    # A late kubelet heartbeat (a loaded machine) once ended a correct run's first step early.
    watch = ClaimWatch(hold=0.0)
    assert watch.update({"a": "Node not Ready (NodeStatusUnknown)"}, claimed={"a"}, up={"a"}) == set()
    assert watch.update({"a": "Node cordoned"}, claimed={"a"}, up={"a"}) == {"a"}


def test_a_claim_that_stops_being_refuted_starts_over() -> None:
    watch = ClaimWatch(hold=3600.0)
    watch.update({"a": "registry-env"}, claimed={"a"}, up={"a"})
    watch.update({}, claimed={"a"}, up={"a"})  # converged at the next look
    assert watch.since == {}


def test_wake_spacing_grows_with_the_fleet_and_never_passes_the_poll() -> None:
    assert wake_spacing(1) == NODE_CHANGE_SETTLE  # a small lab looks right after a node finishes
    assert wake_spacing(10) == NODE_CHANGE_SETTLE
    assert NODE_CHANGE_SETTLE < wake_spacing(50) < wake_spacing(100) < PENDING_POLL
    assert wake_spacing(1000) == PENDING_POLL  # a wake never delays a look past the poll


class NoNodeChanges:
    """No Node ever changes: every wait runs to its bound."""

    def __init__(self) -> None:
        self.nodes_changed = asyncio.Event()

    async def wait_for_node_change(self, within: float) -> bool:
        return await wait_until(self.nodes_changed, within)


@dataclass
class Fleet:
    """Each node's machine problem and Node problem as the test sets them; what was asked."""

    machine_problems: dict[str, str | None]
    node_problems: dict[str, str | None] = field(default_factory=dict)
    claimed_done: set[str] = field(default_factory=set)
    cached_claims: set[str] | None = None  # what the watch cache shows, if not ``claimed_done``
    fresh_claim_reads: list[set[str]] = field(default_factory=list)
    up: set[str] = field(default_factory=set)
    settle_after: int = 0  # how many times ``settled`` says no before it says yes
    machine_looks: list[str] = field(default_factory=list)
    node_asked: list[str] = field(default_factory=list)
    settled_asked: int = 0
    ticks: int = 0

    async def machine(self, address: str) -> str | None:
        self.machine_looks.append(address)
        return self.machine_problems[address]

    async def node(self, addresses: list[str]) -> dict[str, str | None]:
        self.node_asked.extend(addresses)
        return {a: self.node_problems.get(a) for a in addresses}

    def activity(self, address: str) -> int:
        self.ticks += 1  # something new every time: every node is due at every look
        return self.ticks

    async def claimed(self, among: set[str] | None) -> set[str]:
        if among is None:  # the watch cache's (it may lag, or lead, the API server)
            return set(self.cached_claims if self.cached_claims is not None else self.claimed_done)
        self.fresh_claim_reads.append(set(among))
        return self.claimed_done & among

    def listening(self) -> set[str]:
        return set(self.up)

    async def settled(self) -> bool:
        self.settled_asked += 1
        return self.settled_asked > self.settle_after

    def looks(self) -> Looks:
        return Looks(self.machine, self.node, self.activity, self.claimed, self.listening, self.settled)


async def test_a_fleet_that_is_right_ends_the_wait_once_confirmed_after_the_quiet_period() -> None:
    fleet = Fleet({"a": None, "b": None, "gone": None})
    converged: dict[str, float] = {}
    problems = await converge(fleet.looks(), ["a", "b"], ["gone"], NoNodeChanges(), converged,
                              quiet=0.01, within=600.0)
    assert problems == {}
    assert set(converged) == {"a", "b", "gone"}
    assert fleet.machine_looks.count("a") == 2  # the first look and the confirming pass
    assert "gone" not in fleet.node_asked  # a deconfigured instance's Node is not judged


async def test_the_wait_goes_on_until_the_rest_has_settled() -> None:
    fleet = Fleet({"a": None}, settle_after=2)
    assert await converge(fleet.looks(), ["a"], [], NoNodeChanges(), {}, quiet=0.01, within=600.0) == {}
    assert fleet.settled_asked == 3


async def test_a_node_that_never_gets_there_is_reported_with_its_last_problem_at_the_deadline() -> None:
    fleet = Fleet({"a": None, "b": "registry-env"}, node_problems={"a": "cordoned"})
    converged: dict[str, float] = {}
    problems = await converge(fleet.looks(), ["a", "b"], [], NoNodeChanges(), converged, quiet=0.01, within=0.2)
    assert problems == {"a": "cordoned", "b": "registry-env"}  # a's machine is right, its Node is not
    assert converged == {}
    assert fleet.settled_asked == 0  # never everyone right: nothing else was waited on


async def test_every_node_still_off_being_claimed_done_ends_the_wait_before_the_deadline() -> None:
    fleet = Fleet({"a": "certificates", "b": None}, claimed_done={"a"}, up={"a", "b"})
    problems = await converge(fleet.looks(), ["a", "b"], [], NoNodeChanges(), {}, quiet=0.01, within=60.0)
    assert set(problems) == {"a"}
    assert "while its Node reports the cluster's current settings applied" in problems["a"]


async def test_a_claim_only_the_watch_cache_shows_never_ends_the_wait() -> None:
    """Claims are read every poll from the Node watch cache, which may lag: the step ends on claims
    only once Nodes read afresh make them too."""
    fleet = Fleet({"a": "certificates"}, cached_claims={"a"}, up={"a"})
    problems = await converge(fleet.looks(), ["a"], [], NoNodeChanges(), {}, quiet=0.01,
                              within=CLAIM_HOLD + 3 * PENDING_POLL)
    assert problems == {"a": "certificates"}  # reported at the deadline, as it was: no early end
    assert fleet.fresh_claim_reads and all(read == {"a"} for read in fleet.fresh_claim_reads)
    fleet = Fleet({"a": "certificates"}, claimed_done={"a"}, up={"a"})
    problems = await converge(fleet.looks(), ["a"], [], NoNodeChanges(), {}, quiet=0.01, within=600.0)
    assert "the step ended without waiting for the deadline" in problems["a"]
    assert fleet.fresh_claim_reads == [{"a"}]  # one fresh read, once the hold was up


async def test_a_claimed_node_that_is_unreachable_or_down_refutes_nothing() -> None:
    async def judged(machine: str, up: set[str]) -> dict[str, str]:
        fleet = Fleet({"a": machine}, claimed_done={"a"}, up=up)
        # Long enough for a claim to be read several times past its hold.
        return await converge(fleet.looks(), ["a"], [], NoNodeChanges(), {}, quiet=0.01,
                              within=CLAIM_HOLD + 3 * PENDING_POLL)

    cases = [("unreachable (connection refused)", {"a"}), ("certificates", set())]
    found = await asyncio.gather(*(judged(machine, up) for machine, up in cases))
    assert found == [{"a": machine} for machine, _ in cases]  # reported as they were, at the deadline


async def test_a_node_change_during_a_pass_wakes_the_next_wait() -> None:
    changes = NoNodeChanges()
    woken: list[bool] = []
    wait = changes.wait_for_node_change

    async def recorded(within: float) -> bool:
        woken.append(await wait(within))
        return woken[-1]

    changes.wait_for_node_change = recorded  # type: ignore[method-assign]
    fleet = Fleet({"a": "not-ready"})
    changes.nodes_changed.set()  # before the wait began: already looked at, no wake

    async def machine(address: str) -> str | None:
        fleet.machine_looks.append(address)
        if len(fleet.machine_looks) == 1:
            fleet.machine_problems["a"] = None
            changes.nodes_changed.set()  # the reconciler finished the node while it was looked at
            return "not-ready"
        return fleet.machine_problems[address]

    looks = Looks(machine, fleet.node, fleet.activity, fleet.claimed, fleet.listening, fleet.settled)
    assert await converge(looks, ["a"], [], changes, {}, quiet=0.01, within=600.0) == {}
    assert woken == [True]  # not lost, and not mistaken for one from before the pass


async def test_the_deadline_moves_by_the_labs_own_stall_and_no_further() -> None:
    """Time the lab's loop could not run is not the reconciler's: the wait lasts that much longer."""
    fleet = Fleet({"b": "registry-env"})
    started = time.monotonic()
    problems = await converge(fleet.looks(), ["b"], [], NoNodeChanges(), {}, quiet=0.01, within=0.2,
                              stalled=lambda since: 0.6)  # as if the loop had stalled 0.6 s meanwhile
    waited = time.monotonic() - started
    assert problems == {"b": "registry-env"} and waited >= 0.8


def _node(name: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "ready": ready}


class NodeReads:
    """A watch cache and an API server that may disagree (the cache lags), counting fresh reads."""

    def __init__(self, cached: dict[str, dict[str, Any]], server: dict[str, dict[str, Any]]) -> None:
        self.cached, self.server = cached, server
        self.one: list[str] = []
        self.lists = 0

    async def read_one(self, cached: dict[str, Any]) -> dict[str, Any] | None:
        name = cached["metadata"]["name"]
        self.one.append(name)
        return next((n for n in self.server.values() if n["metadata"]["name"] == name), None)

    async def read_all(self) -> dict[str, dict[str, Any]]:
        self.lists += 1
        return dict(self.server)

    async def problems(self, addresses: list[str]) -> dict[str, str | None]:
        return await node_problems(addresses, self.cached.get, self.read_one, self.read_all,
                                   lambda a, n: None if n and n["ready"] else "NotReady")


async def test_a_node_the_cache_shows_on_target_counts_only_once_read_afresh() -> None:
    """The cache says Ready, the server has it NotReady again (a lagging watch): not on target."""
    reads = NodeReads({"a": _node("win-a", True)}, {"a": _node("win-a", False)})
    assert await reads.problems(["a"]) == {"a": "NotReady"}
    assert reads.one == ["win-a"] and reads.lists == 0


async def test_a_node_the_cache_shows_off_target_costs_no_read() -> None:
    reads = NodeReads({"a": _node("win-a", False), "b": _node("win-b", True)},
                      {"a": _node("win-a", True), "b": _node("win-b", True)})
    assert await reads.problems(["a", "b"]) == {"a": "NotReady", "b": None}  # a: its next change wakes the judge
    assert reads.one == ["win-b"] and reads.lists == 0


async def test_many_to_confirm_or_one_the_cache_lacks_are_read_with_one_list() -> None:
    many = [str(i) for i in range(FRESH_READS + 1)]
    reads = NodeReads({a: _node(f"win-{a}", True) for a in many}, {a: _node(f"win-{a}", True) for a in many})
    assert await reads.problems(many) == dict.fromkeys(many)
    assert reads.lists == 1 and not reads.one
    unseen = NodeReads({}, {"a": _node("win-a", True)})
    assert await unseen.problems(["a", "gone"]) == {"a": None, "gone": "NotReady"}
    assert unseen.lists == 1
