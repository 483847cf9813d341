"""A vendor's proxy image run as the lab's proxy, through testcontainers.

The container shares the host's network (it listens on the lab's loopback address and reaches the
origins there), gets the lab's virtual names as extra hosts, and has its configuration directory
mounted at the same path, so ``{config_dir}`` and the other placeholders mean the same inside.
Its output goes to the lab's ``proxy.log`` when it stops, and it is removed on every exit: by
``stop``, at interpreter exit, and — after a ``SIGKILL`` no process survives — by the next lab's
sweep of containers whose owning process is gone (Ryuk, testcontainers' own reaper, is an image
no registry here serves).
"""

from __future__ import annotations

import atexit
import contextlib
import os
from pathlib import Path
from typing import Any

from proxyfleet.core.lifecycle import process_alive
from proxyfleet.core.secretfiles import write_private

OWNER_LABEL = "io.proxyfleet.owner-pid"
ROLE_LABEL = "io.proxyfleet.role"
_LIVE: dict[str, Any] = {}  # container id -> container, removed at interpreter exit


class ContainerError(RuntimeError):
    """The container engine or the image cannot do what the lab asks."""


def _docker() -> Any:
    """The docker SDK client of testcontainers, with Ryuk off (see the module docstring)."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.docker_client import DockerClient

    testcontainers_config.ryuk_disabled = True
    try:
        client = DockerClient()
        client.client.ping()
    except Exception as exc:  # the SDK raises several kinds for "no daemon"
        raise ContainerError(f"no container engine answers ({type(exc).__name__}: {exc}); start dockerd, "
                             "or set DOCKER_HOST") from None
    return client


def engine_available() -> str | None:
    """None when a container engine answers, else why not (for tests that need one)."""
    try:
        _docker()
    except ContainerError as exc:
        return str(exc)
    return None


def image_present(image: str) -> bool:
    """Whether ``image`` is in the engine's local store (nothing is pulled)."""
    import docker.errors

    try:
        _docker().client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def sweep_orphans() -> list[str]:
    """Remove proxy containers whose owning process has ended (a lab killed outright)."""
    removed = []
    client = _docker().client
    for container in client.containers.list(all=True, filters={"label": ROLE_LABEL + "=vendor-proxy"}):
        owner = str(container.labels.get(OWNER_LABEL, ""))
        if owner.isdigit() and process_alive(int(owner)):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.short_id)
    return removed



@atexit.register
def _remove_leftovers() -> None:
    for container in list(_LIVE.values()):
        with contextlib.suppress(Exception):
            container.remove(force=True)
    _LIVE.clear()


class ProxyContainer:
    """One container of the vendor's image (blocking calls: run them in a thread)."""

    def __init__(self, image: str, command: list[str] | None, config_dir: Path, extra_hosts: dict[str, str],
                 user: str | None, output_path: Path) -> None:
        self.image = image
        self.command = command
        self.config_dir = config_dir
        self.extra_hosts = extra_hosts
        self.user = user
        self.output_path = output_path
        self._container: Any = None

    def start(self) -> None:
        from testcontainers.core.container import DockerContainer

        client = _docker()
        sweep_orphans()
        try:
            client.client.images.get(self.image)
        except Exception:
            raise ContainerError(f"the image {self.image} is not in the local image store (the lab pulls "
                                 "nothing; docker pull or docker load it first)") from None
        options: dict[str, Any] = {"network_mode": "host", "extra_hosts": self.extra_hosts,
                                   "labels": {OWNER_LABEL: str(os.getpid()), ROLE_LABEL: "vendor-proxy"}}
        if self.user:
            options["user"] = self.user
        container = DockerContainer(self.image, **options)
        container.with_volume_mapping(str(self.config_dir), str(self.config_dir), "rw")
        if self.command:
            container.with_command(self.command)
        try:
            container.start()
        except Exception as exc:
            raise ContainerError(f"the container of {self.image} did not start: {exc}") from None
        self._container = container.get_wrapped_container()
        _LIVE[self._container.id] = self._container

    @property
    def running(self) -> bool:
        if self._container is None:
            return False
        try:
            self._container.reload()
        except Exception:
            return False
        return bool(self._container.status in ("created", "running"))

    def logs(self) -> str:
        if self._container is None:
            return ""
        with contextlib.suppress(Exception):
            return bytes(self._container.logs()).decode(errors="replace")
        return ""

    def stop(self, grace: float) -> None:
        """SIGTERM, SIGKILL after ``grace``, keep its output, remove it."""
        container, self._container = self._container, None
        if container is None:
            return
        with contextlib.suppress(Exception):
            container.stop(timeout=max(1, int(grace)))
        with contextlib.suppress(Exception):
            write_private(self.output_path, bytes(container.logs()))
        with contextlib.suppress(Exception):
            container.remove(force=True)
        _LIVE.pop(container.id, None)
