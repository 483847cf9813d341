"""Linux nodes in the small traffic lab (``tests.simulators.traffic``): the lab with its proxy's
URL, and a node on the lab's network, started and stopped around a test; and the two fixtures a
test module makes of them (``lab_fixture``, ``node_fixture``)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest
import pytest_asyncio

from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.noderoot import RHCOS_NODE, Flavour
from tests.simulators.traffic import PROXY_NAME, Egress, egress_lab


@dataclass
class LinuxEgressLab(Egress):
    """The traffic lab and the directory its nodes keep their trees in."""

    state: Path

    @property
    def proxy_url(self) -> str:
        return f"http://{PROXY_NAME}:{self.proxy.port}"


@contextlib.asynccontextmanager
async def linux_egress_lab(state: Path) -> AsyncIterator[LinuxEgressLab]:
    """The origins and the proxy, stopped on leaving."""
    async with egress_lab(state) as egress:
        yield LinuxEgressLab(egress.network, egress.public_ca, egress.origins, egress.proxy, state)


@contextlib.asynccontextmanager
async def linux_node_in(lab: LinuxEgressLab, name: str, address: str, flavour: Flavour, key: asyncssh.SSHKey,
                        system_cas: bytes) -> AsyncIterator[LinuxNode]:
    """A started node on the lab's network that lets ``key`` in; stopped on leaving."""
    running = LinuxNode(LinuxNodeConfig(name, address, 0, lab.state / name,
                                        asyncssh.generate_private_key("ssh-ed25519"), [key.convert_to_public()],
                                        flavour, system_cas, network=lab.network))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def lab_fixture(name: str) -> Callable[..., AsyncIterator[LinuxEgressLab]]:
    """A module's ``lab`` fixture: one traffic lab for the module (its state in a directory
    called ``name``)."""
    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="lab")
    async def lab(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LinuxEgressLab]:
        async with linux_egress_lab(tmp_path_factory.mktemp(name)) as egress:
            yield egress

    return lab


def node_fixture(key: asyncssh.SSHKey, system_cas: bytes, network: str) -> Callable[..., AsyncIterator[LinuxNode]]:
    """A module's ``node`` fixture: a new node for each test (RHCOS, or the flavour the test
    passes as its indirect parameter) at the next address of ``network`` (``127.10.9.``)."""
    numbers = itertools.count(1)

    @pytest_asyncio.fixture(loop_scope="module", name="node")
    async def node(lab: LinuxEgressLab, request: pytest.FixtureRequest) -> AsyncIterator[LinuxNode]:
        flavour: Flavour = getattr(request, "param", RHCOS_NODE)
        number = next(numbers)
        async with linux_node_in(lab, f"worker-{number}", f"{network}{number}", flavour, key, system_cas) as running:
            yield running

    return node
