"""A Linux node's network clients, answered by the lab as node-aware commands: ``curl`` and
``crictl``. Their traffic leaves from the node's own address through the lab's network (names
resolve only through the lab's table), so the proxy's flow log and the origins' access logs
attribute it to the node, and every request leaves a record in the node's egress log.

- ``curl`` reads the environment of the process that ran it (``/proc/PID/environ`` of the
  node's ``curl``, so an unexported variable is not seen, as on a real node), with curl's rules:
  ``http_proxy`` only in lower case, ``HTTPS_PROXY`` in either. It trusts the bundle the flavour's
  curl is built to read (OpenSSL's CA file: the extracted bundle), read at every call: an anchor
  without ``update-ca-trust``/``update-ca-certificates`` is not trusted. Files it is given
  (``-o``, ``--cacert``) are the node's, named as the calling shell names them.
- ``crictl pull`` asks the container runtime (CRI-O on RHCOS, containerd on Debian), which pulls
  with its own process environment — the one systemd started it with, by Go's rules (both
  spellings, upper case first) — and the CAs it loaded when it started (Go reads them once per
  process): a restart is what brings a new proxy or CA to it.

Not modelled: curl's own config files (``.curlrc``), ``--proxy-cacert``, HTTP/2, and the runtime's
registries.conf (mirrors, insecure registries).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from proxyfleet.core.imagereference import ImageReference
from proxyfleet.simulators.boots import utc_now
from proxyfleet.simulators.egress.client import EgressSession
from proxyfleet.simulators.egress.crictl import ContainerRuntime, crictl
from proxyfleet.simulators.egress.curl import LINUX_CURL, CurlInvocation, run_curl
from proxyfleet.simulators.egress.imagepull import USER_AGENT, pull_image
from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel
from proxyfleet.simulators.linux.servicemanager import Outcome
from proxyfleet.simulators.linux.truststores import read_bundle

# What crictl reaches on each flavour's runtime (RuntimeName, RuntimeVersion, its socket).
RUNTIMES = {"crio.service": ("cri-o", "1.30.6", "/var/run/crio/crio.sock"),
            "containerd.service": ("containerd", "v1.7.0", "/run/containerd/containerd.sock")}


class CallerGone(RuntimeError):
    """The process that asked is not the session's (or no longer exists)."""


def caller_environment(pid: int, session: int) -> dict[str, str]:
    """The environment the node's process ``pid`` was started with, as ``getenv`` reads it — only
    if it belongs to the command's session ``session``: a node's script may name any pid on its
    channel, and must not read another host process's environment through it."""
    try:
        if os.getsid(pid) != session:
            raise CallerGone(f"process {pid} is not of this node command's session")
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except (ProcessLookupError, FileNotFoundError, PermissionError) as exc:
        raise CallerGone(f"process {pid} is gone ({exc})") from None
    environment: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and name:  # getenv returns the first of duplicate names
            environment.setdefault(name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
    return environment


def _on_node(pid: int, name: str) -> str:
    """The host path of the file the node's process ``pid`` names ``name``: through its own root
    and working directory, so it is where the calling shell itself would read or write it."""
    return f"/proc/{pid}/root{name}" if name.startswith("/") else f"/proc/{pid}/cwd/{name}"


def _read(pid: int, name: str) -> bytes:
    return Path(_on_node(pid, name)).read_bytes()


def _write(pid: int, name: str, data: bytes) -> None:
    Path(_on_node(pid, name)).write_bytes(data)


def _recording(model: LinuxNodeModel, client: str) -> dict[str, Any]:
    return {"client": client, "recorder": model.egress.add, "session": model.egress.new_session()}


async def curl(model: LinuxNodeModel, args: list[str], pid: int, session: int) -> Outcome:
    """``curl ARGS`` run by the node's process ``pid``."""
    environment = caller_environment(pid, session)
    bundle = read_bundle(model.root, model.flavour.trust.bundle)  # RHCOS' curl reads its link to it
    call = CurlInvocation(LINUX_CURL, environment, bundle.context, model.network, model.address,
                          _recording(model, "curl"), lambda name: _read(pid, name),
                          lambda name, data: _write(pid, name, data))
    stdout, stderr, code = await run_curl(args, call)
    return Outcome(code, stdout, stderr)


def container_runtime(model: LinuxNodeModel) -> ContainerRuntime:
    """The flavour's container runtime as crictl reaches it now: running or not, with the
    environment and CAs its process started with."""
    unit = model.flavour.runtime
    name, version, socket_path = RUNTIMES[unit]
    process = model.systemd.running.get(unit)
    roots = process.roots if process is not None else None

    async def pull(environment: Mapping[str, str], image: ImageReference) -> str:
        assert roots is not None  # only a running runtime pulls
        async with EgressSession(model.network, model.address, roots.context, user_agent=USER_AGENT,
                                 **_recording(model, "containerd" if name == "containerd" else "cri-o")) as egress:
            return await pull_image(egress, environment, image)

    return ContainerRuntime(name, version, f"unix://{socket_path}",
                            f"dial unix {socket_path}: connect: no such file or directory",
                            process.environment if process is not None else None, model.images, pull,
                            utc_now().strftime("%Y-%m-%dT%H:%M:%SZ"))


async def crictl_command(model: LinuxNodeModel, args: list[str], pid: int, session: int) -> Outcome:
    """``crictl ARGS`` on the node: the runtime's, not the caller's, environment."""
    stdout, stderr, code = await crictl(args, container_runtime(model))
    return Outcome(code, stdout, stderr)


EGRESS_COMMANDS: dict[str, Callable[[LinuxNodeModel, list[str], int, int], Awaitable[Outcome]]] = {
    "curl": curl,
    "crictl": crictl_command,
}
