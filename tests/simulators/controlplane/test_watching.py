"""The control plane's controllers: a pass on start and after each wanted change, and a pass that
raises is logged without stopping the controller; an expensive pass paces the next one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from proxyfleet.simulators.controlplane.resources import CONFIGMAPS
from proxyfleet.simulators.controlplane.store import Store
from proxyfleet.simulators.controlplane.watching import MAX_PAUSE, WatchingController, pause_before_pass
from tests.support import wait_until


class Counting(WatchingController):
    name = "counting"
    watches = (CONFIGMAPS,)

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.passes = 0
        self.fail_next = False

    def wants(self, event: dict[str, Any]) -> bool:
        return not event["object"]["metadata"]["name"].startswith("ignored")

    async def reconcile_pass(self) -> None:
        self.passes += 1
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("a bug in a pass")


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


async def test_passes_follow_wanted_changes_and_survive_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    store = Store()
    controller = Counting(store)
    controller.start()
    try:
        await wait_until(lambda: controller.passes == 1)  # the first pass on start
        controller.fail_next = True
        store.create(CONFIGMAPS, configmap("a"))
        await wait_until(lambda: controller.passes == 2)
        assert "counting failed" in caplog.text
        store.create(CONFIGMAPS, configmap("ignored-1"))
        store.create(CONFIGMAPS, configmap("b"))  # still running after the failed pass
        await wait_until(lambda: controller.passes == 3)
        store.create(CONFIGMAPS, configmap("c"))
        await wait_until(lambda: controller.passes == 4)  # "ignored-1" woke nothing on its own
    finally:
        await controller.stop()
    store.create(CONFIGMAPS, configmap("after-stop"))
    await asyncio.sleep(0)
    assert controller.passes == 4


def test_an_expensive_pass_waits_longer_before_the_next_a_cheap_one_only_the_debounce() -> None:
    assert pause_before_pass(0.02, 19, 0.0001) == 0.02  # a small lab's pass: the debounce alone
    assert pause_before_pass(0.02, 19, 0.005) == pytest.approx(0.095)  # a 1,000-node pass: ~10 a second
    assert pause_before_pass(0.02, 19, 0.7) == MAX_PAUSE  # a rare heavy pass holds the next back briefly
    assert pause_before_pass(0.0, 0.0, 5.0) == 0.0  # no pacing: no wait, however long the pass


class Paced(Counting):
    """Each pass costs 1 s of CPU by its (fake) clock."""

    pacing = 0.25

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.now = 0.0

    def clock(self) -> float:  # type: ignore[override]
        return self.now

    async def reconcile_pass(self) -> None:
        await super().reconcile_pass()
        self.now += 1.0


async def test_a_paced_controller_measures_each_pass_and_still_sees_every_change() -> None:
    store = Store()
    controller = Paced(store)
    controller.start()
    try:
        await wait_until(lambda: controller.passes == 1)
        assert controller.last_pass_cost == 1.0  # what the next wait is paced by (0.25 s here)
        store.create(CONFIGMAPS, configmap("a"))
        store.create(CONFIGMAPS, configmap("b"))
        await wait_until(lambda: controller.passes >= 2)
        # level-triggered: whatever the pause gathered, no change is left without a pass after it
        store.create(CONFIGMAPS, configmap("c"))
        passes = controller.passes
        await wait_until(lambda: controller.passes > passes)
    finally:
        await controller.stop()
