"""The control plane's controllers: a pass on start and after each wanted change, and a pass that
raises is logged without stopping the controller."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from proxyfleet.simulators.controlplane.resources import CONFIGMAPS
from proxyfleet.simulators.controlplane.store import Store
from proxyfleet.simulators.controlplane.watching import WatchingController
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
