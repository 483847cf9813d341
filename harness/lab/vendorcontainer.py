"""A vendor's proxy image run as the lab's proxy, through testcontainers.

The container shares the host's network (it listens on the lab's loopback address and reaches the
origins there), gets the lab's virtual names as extra hosts, and has its configuration directory
mounted at the same path, so ``{config_dir}`` and the other placeholders mean the same inside.
Its output goes to the lab's ``proxy.log`` when it stops, and it is removed on every exit: by
``stop``, at interpreter exit, when its start fails, and — after a ``SIGKILL`` no process
survives — by the next lab's sweep of containers whose owning process is provably gone (Ryuk,
testcontainers' own reaper, is an image no registry here serves). An engine may be shared (a CI
runner's socket, other containers): a container records its owner's pid with its start time, PID
namespace and boot id (``proxyfleet.core.owners``), and the sweep leaves alone every container
whose owner it cannot prove dead from here — another namespace's, another boot's, an old label's.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proxyfleet.core.owners import Owner, current_owner, owner_gone
from proxyfleet.core.secretfiles import write_private

log = logging.getLogger(__name__)

LABEL_PREFIX = "io.proxyfleet."
OWNER_LABEL = LABEL_PREFIX + "owner-pid"  # with owner-start-time, owner-pid-namespace, owner-boot-id
ROLE_LABEL = LABEL_PREFIX + "role"
START_LABEL = LABEL_PREFIX + "start"  # unique to one start: finds a container whose start failed
_LIVE: dict[str, Any] = {}  # container id -> container, removed at interpreter exit
# How long one engine call may take while a container is created and started. The SDK's 60 s
# default failed on a loaded two-core machine: under dockerd's vfs driver a create copies the
# image's whole root (~300 MB for Squid). The bound follows the work — the image's size at a
# pessimistic 1 MB/s — and is never under ten minutes; a wedged engine still ends it.
MIN_START_TIMEOUT = 600.0
SLOWEST_COPY = 1_000_000  # bytes per second


def start_timeout(image_bytes: int) -> float:
    """The bound on one engine call of a container start, for an image of ``image_bytes``."""
    return max(MIN_START_TIMEOUT, image_bytes / SLOWEST_COPY)


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


def orphaned(labels: Mapping[str, str]) -> bool:
    """Whether a proxy container's owner, as its labels record it, has provably ended."""
    owner = Owner.from_labels(labels, LABEL_PREFIX)
    return owner is not None and owner_gone(owner)


def _listed(api: Any, label: str) -> list[dict[str, Any]]:
    """The containers carrying ``label`` as the engine lists them (id and labels in one call: the
    SDK's ``containers.list`` inspects each one afterwards, and one removed meanwhile by another
    lab's sweep failed the whole listing with 404)."""
    return list(api.containers(all=True, filters={"label": label}))


def _remove(api: Any, container_id: str) -> bool:
    """Remove a container, whatever its state; whether this call removed it (False: gone already,
    another lab's sweep was first)."""
    import docker.errors

    try:
        api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: its removal is already in progress (another sweep)
            # housekeeping: another lab's leftover that will not go never stops this lab
            log.warning("could not remove the proxy container %s: %s", container_id[:12], exc)
        return False
    return True


def sweep_orphans() -> list[str]:
    """Remove proxy containers whose owning process has provably ended (a lab killed outright);
    their short ids."""
    api = _docker().client.api  # one client (and one ping) for the whole sweep
    return [c["Id"][:12] for c in _listed(api, ROLE_LABEL + "=vendor-proxy")
            if orphaned(c.get("Labels") or {}) and _remove(api, c["Id"])]


def remove_started(start: str) -> list[str]:
    """Remove the containers of one start (its ``START_LABEL``), whatever state they are in."""
    api = _docker().client.api
    return [c["Id"][:12] for c in _listed(api, f"{START_LABEL}={start}") if _remove(api, c["Id"])]


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
            size = int(client.client.images.get(self.image).attrs.get("Size") or 0)
        except Exception:
            raise ContainerError(f"the image {self.image} is not in the local image store (the lab pulls "
                                 "nothing; docker pull or docker load it first)") from None
        start = secrets.token_hex(8)
        labels = {**current_owner().as_labels(LABEL_PREFIX), ROLE_LABEL: "vendor-proxy", START_LABEL: start}
        options: dict[str, Any] = {"network_mode": "host", "extra_hosts": self.extra_hosts, "labels": labels}
        if self.user:
            options["user"] = self.user
        container = DockerContainer(self.image, docker_client_kw={"timeout": start_timeout(size)}, **options)
        container.with_volume_mapping(str(self.config_dir), str(self.config_dir), "rw")
        if self.command:
            container.with_command(self.command)
        try:
            container.start()
        except BaseException as exc:
            # The engine may have created it before the start failed (a command it cannot run):
            # found by this start's label, it goes, whatever our side of the call knows of it.
            with contextlib.suppress(Exception):
                remove_started(start)
            if not isinstance(exc, Exception):
                raise
            raise ContainerError(f"the container of {self.image} did not start: {exc}") from None
        self._container = container.get_wrapped_container()
        _LIVE[self._container.id] = self._container

    @property
    def pid(self) -> int | None:
        """The container's first process as this host sees it (blocking), None when not running."""
        if self._container is None:
            return None
        try:
            self._container.reload()
        except Exception:
            return None
        pid = self._container.attrs.get("State", {}).get("Pid")
        if not isinstance(pid, int) or pid <= 0:
            return None
        # An engine elsewhere (DOCKER_HOST) numbers its own processes: only a process of this host
        # whose control group names the container is it.
        try:
            cgroups = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return None
        return pid if self._container.id in cgroups else None

    @property
    def running(self) -> bool:
        if self._container is None:
            return False
        try:
            self._container.reload()
        except Exception:
            return False
        return bool(self._container.status in ("created", "running"))

    def logs(self, tail: int | None = None) -> str:
        """Its output as the engine keeps it (its last ``tail`` lines only, if given)."""
        if self._container is None:
            return ""
        with contextlib.suppress(Exception):
            return bytes(self._container.logs(tail="all" if tail is None else tail)).decode(errors="replace")
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
