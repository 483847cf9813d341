"""A Windows node's network clients: ``crictl.exe pull`` (containerd's Go rules and process
environment), ``curl.exe`` (curl's rules, the session environment, Schannel's words) and
``Invoke-WebRequest`` (which, like Windows PowerShell 5.1, ignores HTTP(S)_PROXY). What curl and
containerd do on every node kind is ``simulators.egress``'s; this module says what they read here.

All of them trust ``Cert:\\LocalMachine\\Root`` (the built-in public roots plus whatever was
imported), resolve names through the lab table and leave from the node's own address, so the
proxy's flow log and the origins' access logs attribute their traffic to the node.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proxyfleet.core.imagereference import ImageReference
from proxyfleet.simulators.egress.client import EgressSession, trust_context
from proxyfleet.simulators.egress.crictl import ContainerRuntime
from proxyfleet.simulators.egress.crictl import crictl as run_crictl
from proxyfleet.simulators.egress.curl import WINDOWS_CURL, CurlInvocation, run_curl
from proxyfleet.simulators.egress.imagepull import USER_AGENT, pull_image
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.windows.environment import EnvironmentBlock
from proxyfleet.simulators.windows.machine import WindowsMachine

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.context import NativeResult
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter


def node_network(interpreter: Interpreter) -> tuple[LabNetwork | None, str]:
    """The lab network and the node's own address (127.0.0.1 outside a fleet)."""
    runtime = interpreter.session.runtime
    network = getattr(runtime, "network", None)
    address = getattr(runtime, "address", "127.0.0.1")
    return network, address


def recording(machine: WindowsMachine, client: str) -> dict[str, Any]:
    """An ``EgressSession``'s recorder arguments: every request of this invocation of ``client``
    goes into the machine's egress log, under one session number."""
    return {"client": client, "recorder": machine.egress.add, "session": machine.egress.new_session()}


_TRUST_CACHE: dict[frozenset[str], ssl.SSLContext] = {}


def machine_trust(machine: WindowsMachine) -> ssl.SSLContext:
    """An SSL context trusting exactly the node's LocalMachine\\Root store."""
    store = machine.stores.machine_root
    key = frozenset(store.certificates)
    context = _TRUST_CACHE.get(key)
    if context is None:
        context = trust_context([c.der for c in store.certificates.values()])
        if len(_TRUST_CACHE) > 4096:
            _TRUST_CACHE.clear()
        _TRUST_CACHE[key] = context
    return context


async def machine_pull(machine: WindowsMachine, network: LabNetwork | None, source: str,
                       environment: Mapping[str, str], image: ImageReference) -> str:
    """containerd's pull from the node (``imagepull``): its trust, its egress log."""
    async with EgressSession(network, source, machine_trust(machine), user_agent=USER_AGENT,
                             **recording(machine, "containerd")) as session:
        return await pull_image(session, environment, image)


async def crictl(interpreter: Interpreter, name: str, args: list[str],
                 stdin: str | None) -> NativeResult:
    """``crictl.exe`` against the node's containerd (its named pipe)."""
    from proxyfleet.simulators.windows.powershell.context import NativeResult

    machine = interpreter.session.machine
    containerd = machine.service("containerd")
    network, address = node_network(interpreter)
    # Go's os.Getenv on Windows is case-insensitive, like the process environment itself.
    environment = (EnvironmentBlock(containerd.process.environment)
                   if containerd is not None and containerd.process is not None else None)

    async def pull(env: Mapping[str, str], image: ImageReference) -> str:
        return await machine_pull(machine, network, address, env, image)

    runtime = ContainerRuntime(
        "containerd", "v1.7.0", "npipe:////./pipe/containerd-containerd",
        "open \\\\.\\pipe\\containerd-containerd: The system cannot find the file specified.",
        environment, machine.images, pull, machine.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
    stdout, stderr, code = await run_crictl(args, runtime)
    return NativeResult(stdout, stderr, code)


async def curl(interpreter: Interpreter, name: str, args: list[str],
               stdin: str | None) -> NativeResult:
    """``curl.exe`` in the session: its environment (names case-insensitive, as Windows reads
    them), the machine's Root store, files by the session's paths."""
    from proxyfleet.simulators.windows.powershell.context import NativeResult

    session = interpreter.session
    network, address = node_network(interpreter)

    def write_file(name: str, data: bytes) -> None:
        session.write_file(session.resolve_file_path(name), data)

    call = CurlInvocation(WINDOWS_CURL, session.environment.copy(), machine_trust(session.machine), network,
                          address, recording(session.machine, "curl"),
                          lambda name: session.read_file(session.resolve_file_path(name)), write_file)
    stdout, stderr, code = await run_curl(args, call)
    return NativeResult(stdout, stderr, code)
