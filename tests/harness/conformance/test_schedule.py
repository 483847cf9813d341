"""LookSchedule: a node off its target on machine state is looked at again when something happened
on it or the last look went stale; Node-level and reachability problems every time."""

from proxyfleet.harness.conformance.schedule import LookSchedule


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_quiet_node_waits_until_something_happens_or_the_look_is_stale() -> None:
    clock = Clock()
    schedule = LookSchedule(stale_after=2.0, clock=clock)
    assert schedule.due("a", "registry-env", activity=5)  # never looked at
    schedule.looked("a", activity_before=5)  # the look itself made it 6
    assert not schedule.due("a", "registry-env", activity=6)
    assert schedule.due("a", "registry-env", activity=7)  # someone ran a command, it booted, ...
    clock.now += 2.0
    assert schedule.due("a", "certificates", activity=6)  # nothing announced, but stale


def test_problems_the_machine_does_not_announce_are_looked_at_every_time() -> None:
    schedule = LookSchedule(stale_after=60.0, clock=Clock())
    schedule.looked("a", activity_before=0)
    assert schedule.due("a", "unreachable (connection refused)", activity=1)
    assert schedule.due("a", "the administrator's cordon was lost (Node schedulable)", activity=1)
    assert not schedule.due("a", "services-restarted", activity=1)
