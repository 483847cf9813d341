"""Helpers shared by the tests: running PowerShell on a machine, waiting on conditions,
talking to nodes over SSH."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import asyncssh
import trustme
from aiohttp import web

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.nodessh import DATA_DIRECTORY, data_prologue, encoded_command
from proxyfleet.core.owners import Owner, current_owner
from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.controlplane.resources import NODES, PODS
from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.windows.machine import MachineSettings, WindowsMachine
from proxyfleet.simulators.windows.node import WindowsNode
from proxyfleet.simulators.windows.powershell.context import RunResult
from proxyfleet.simulators.windows.powershell.interpreter import Interpreter
from proxyfleet.simulators.windows.session import Session

T = TypeVar("T")

# Seconds after which a wait is a hang, not a slow machine: every wait in the tests returns as soon
# as its condition holds, so this bound costs a passing test nothing and never decides a verdict
# (a loaded CI runner took over 60 s for work that takes 6 s here).
HANG = 600.0


def new_machine(root: Path, **settings: object) -> WindowsMachine:
    machine = WindowsMachine.create(MachineSettings(hostname="win-test", **settings), root)  # type: ignore[arg-type]
    machine.boot()
    return machine


async def ps(machine: WindowsMachine, script: str, session: Session | None = None) -> RunResult:
    """Run a script in a fresh session (a new logon) unless one is given."""
    return await Interpreter(session or Session(machine)).run(script)


async def ps_with_data(machine: WindowsMachine, script: str, data: object) -> RunResult:
    """Run a script the way ``NodeConnection.script(..., data=...)`` does: the data file in the
    user's profile (where SFTP puts it), the prologue that loads and deletes it."""
    name = "0123456789abcdef.json"
    machine.filesystem.mkdir(f"C:\\Users\\Administrator\\{DATA_DIRECTORY}")
    machine.filesystem.write_bytes(f"C:\\Users\\Administrator\\{DATA_DIRECTORY}\\{name}", json.dumps(data).encode())
    result = await ps(machine, data_prologue(name) + script)
    assert not machine.filesystem.exists(f"C:\\Users\\Administrator\\{DATA_DIRECTORY}\\{name}")
    return result


async def wait_until(condition: Callable[[], bool | Awaitable[bool]], timeout: float = HANG,
                     what: str = "condition") -> None:
    """Poll a condition until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def starve_loop(seconds: float) -> None:
    """Block this loop for ``seconds``, as a loaded CI machine starves a lab, then let it run what
    came due meanwhile (a few turns): simulated durations on the host's clock must not shrink."""
    time.sleep(seconds)  # noqa: ASYNC251 - the starvation is the point
    for _ in range(5):
        await asyncio.sleep(0)


async def connect(fleet: Fleet, node: WindowsNode, username: str | None = None, key_path: Path | None = None,
                  **options: object) -> asyncssh.SSHClientConnection:
    """An SSH connection to ``node`` on the fleet's client key (or ``key_path``: its observer key, say)."""
    known = asyncssh.import_known_hosts(f"[{node.address}]:{node.port} {node.host_key_openssh}\n")
    return await asyncssh.connect(
        node.address, node.port, username=username or node.username,
        client_keys=[str(key_path or fleet.client_key_path)], known_hosts=known,
        agent_path=None, config=[], **options)  # type: ignore[arg-type]


async def run_on(fleet: Fleet, node: WindowsNode, command: str) -> asyncssh.SSHCompletedProcess:
    async with await connect(fleet, node) as conn:
        return await conn.run(command, check=False)


async def run_powershell(fleet: Fleet, node: WindowsNode, script: str) -> asyncssh.SSHCompletedProcess:
    """Run PowerShell on a node whatever its OpenSSH default shell (cmd.exe or PowerShell), as a
    real client must: ``powershell.exe -EncodedCommand``."""
    return await run_on(fleet, node, encoded_command(script))


@contextlib.asynccontextmanager
async def workload_plane(state_dir: Path, node_names: Sequence[str]) -> AsyncIterator[ControlPlane]:
    """A control plane running the lab's workloads (one web pod per node) over Ready Nodes
    ``node_names`` (plain objects: no kubelet; ``run_bound_pods`` plays its part)."""
    plane = ControlPlane(ControlPlaneSettings(state_dir, trustme.CA().cert_pem.bytes().decode(),
                                              workload_replicas=len(node_names)))
    await plane.start()
    for name in node_names:
        plane.store.create(NODES, {"metadata": {"name": name, "labels": {"kubernetes.io/os": "windows",
                                                                       "kubernetes.io/hostname": name}},
                                   "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    try:
        yield plane
    finally:
        await plane.stop()


def run_bound_pods(plane: ControlPlane) -> int:
    """The kubelets' part: report every bound pod running and ready. Returns how many it started."""
    started = 0
    for pod in plane.store.list(PODS, None):
        if pod["spec"].get("nodeName") and pod["status"].get("phase") != "Running":
            pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            pod["metadata"].pop("resourceVersion")
            plane.store.update(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], pod, subresource="status")
            started += 1
    return started


def end_terminating_pods(plane: ControlPlane) -> int:
    """The kubelets' other part: delete every Terminating pod (its containers stopped). Returns how
    many it ended."""
    ended = 0
    for pod in plane.store.list(PODS, None):
        if pod["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(Exception):  # gone meanwhile
                plane.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
                ended += 1
    return ended


@contextlib.asynccontextmanager
async def kubelets_ending_pods(plane: ControlPlane) -> AsyncIterator[None]:
    """While inside: each Terminating pod is ended soon after it is marked (the store's watch wakes
    it), as the nodes' kubelets would once its containers stopped."""
    watcher = plane.store.watch(PODS, None, plane.store.resource_version, lambda obj: True)

    async def follow() -> None:
        end_terminating_pods(plane)
        while await watcher.queue.get() is not None:
            end_terminating_pods(plane)

    task = asyncio.get_running_loop().create_task(follow())
    try:
        yield
    finally:
        await stop_task(task)
        plane.store.stop_watch(watcher)


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` served over plain HTTP on a free loopback port; yields its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def dead_owner() -> Owner:
    """This process's owner identity with the pid of one that has ended: provably gone."""
    return dataclasses.replace(current_owner(), pid=dead_pid())


def fill_accept_queue(address: str, port: int, clients: contextlib.ExitStack) -> None:
    """Connect to a listener that never accepts until its accept queue is full (a connect that
    does not complete within a second): later connects hang in SYN retries."""
    for _ in range(16):
        client = clients.enter_context(socket.socket())
        client.settimeout(1.0)
        try:
            client.connect((address, port))
        except TimeoutError:
            return
    raise AssertionError(f"{address}:{port} accepted 16 connections with a backlog of 0")
