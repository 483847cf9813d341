"""A vendor proxy image run by the lab: host network, extra hosts, the configuration mounted,
output kept, removed on every exit — also when its start fails, and after its owner was killed
outright, but never while its owner may live (an engine shared with other PID namespaces)."""

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxyfleet.core.owners import current_owner
from proxyfleet.core.startupclock import tree_cpu_seconds
from proxyfleet.harness.lab.vendor import VendorProxy, VendorProxyError, VendorProxySettings
from proxyfleet.harness.lab.vendorcontainer import (
    LABEL_PREFIX,
    OWNER_LABEL,
    ROLE_LABEL,
    ContainerError,
    ProxyContainer,
    engine_available,
    image_present,
    orphaned,
    start_timeout,
    sweep_orphans,
)
from proxyfleet.simulators.network import Endpoint
from tests.support import dead_pid

TINY_IMAGE = "proxyfleet-test/tiny:host-sh-sleep"


def _tiny_rootfs(root: Path) -> None:
    """/bin/sh and /bin/sleep of this machine, with the libraries they load (a few MB)."""
    for name in ("sh", "sleep"):
        binary = Path(shutil.which(name) or f"/bin/{name}")
        (root / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(binary), root / "bin" / name)
        found = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
        for library in re.findall(r"(/\S+) \(0x", found):
            target = root / library.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(os.path.realpath(library), target)


@pytest.fixture(scope="module")
def tiny_image() -> str:
    """An image of a shell and sleep (built in a second from this machine's binaries)."""
    problem = engine_available()
    if problem is not None:
        pytest.skip(f"needs a container engine: {problem}")
    lock_path = Path(tempfile.gettempdir()) / "proxyfleet-image-tiny.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it right now
        if not image_present(TINY_IMAGE):
            root = Path(tempfile.mkdtemp(prefix="proxyfleet-tiny-"))
            try:
                _tiny_rootfs(root)
                archive = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
                imported = subprocess.run(["docker", "import", "-", TINY_IMAGE], stdin=archive.stdout,
                                          capture_output=True, text=True, timeout=300, check=False)
                archive.wait()
                if imported.returncode != 0:
                    pytest.skip(f"cannot build {TINY_IMAGE}: {imported.stderr[-500:]}")
            finally:
                shutil.rmtree(root, ignore_errors=True)
    return TINY_IMAGE


def _ours() -> list[object]:
    import docker

    return list(docker.from_env().containers.list(all=True, filters={"label": ROLE_LABEL + "=vendor-proxy"}))


def test_no_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    problem = engine_available()
    assert problem is not None and "no container engine answers" in problem and "dockerd" in problem


async def test_an_image_that_is_not_here_is_named_and_nothing_is_pulled(tmp_path: Path, squid_image: str) -> None:
    proxy = VendorProxy(VendorProxySettings(state_dir=tmp_path / "state", listen=Endpoint("127.20.88.1", 3128),
                                            egress_address="127.20.88.2", hosts_text="", image="proxyfleet-test/none:0"))
    with pytest.raises(VendorProxyError, match="not in the local image store"):
        await proxy.start()
    proxy.remove()


async def test_the_container_sees_the_lab_names_and_its_configuration(tmp_path: Path, squid_image: str) -> None:
    config = tmp_path / "config"
    config.mkdir()
    container = ProxyContainer(squid_image, ["sh", "-c", f"getent hosts quay.io; cat {config}/marker; sleep 30"],
                               config, {"quay.io": "127.30.88.1"}, None, tmp_path / "proxy.log")
    (config / "marker").write_text("mounted at the same path\n")
    await asyncio.to_thread(container.start)
    try:
        assert container.running
        deadline = asyncio.get_running_loop().time() + 20
        while "mounted" not in container.logs():
            assert asyncio.get_running_loop().time() < deadline, container.logs()
            await asyncio.sleep(0.1)
        assert "127.30.88.1" in container.logs() and "quay.io" in container.logs()
    finally:
        await asyncio.to_thread(container.stop, 1.0)
    assert "mounted at the same path" in (tmp_path / "proxy.log").read_text()
    assert not container.running
    assert not [c for c in _ours() if str(config) in str(c.attrs)]  # type: ignore[attr-defined]  # removed


def test_a_container_whose_owner_was_killed_is_swept(tmp_path: Path, squid_image: str) -> None:
    # The owner starts a container and is killed outright: nothing of its own can remove it.
    owner = subprocess.Popen([sys.executable, "-c", (
        "import sys; from pathlib import Path\n"
        "from proxyfleet.harness.lab.vendorcontainer import ProxyContainer\n"
        f"c = ProxyContainer({squid_image!r}, ['sleep', '300'], Path({str(tmp_path)!r}), {{}}, None, "
        f"Path({str(tmp_path / 'out.log')!r}))\n"
        "c.start(); print(c._container.short_id, flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    short_id = owner.stdout.readline().strip()
    assert short_id
    assert short_id not in sweep_orphans()  # its owner is alive: not swept
    assert short_id in [c.short_id for c in _ours()]  # type: ignore[attr-defined]
    owner.kill()
    owner.wait()
    # Every start sweeps, so another test's container starting beside this one (pytest -n) may be the
    # sweep that removes it: what must hold is that after a sweep it is gone, whoever swept it. Nothing
    # else removes it (its owner died by SIGKILL, so no atexit ran).
    sweep_orphans()
    assert short_id not in [c.short_id for c in _ours()]  # type: ignore[attr-defined]


def test_a_proxy_user_is_given_to_the_container_as_numbers(tmp_path: Path) -> None:
    proxy = VendorProxy(VendorProxySettings(state_dir=tmp_path, listen=Endpoint("127.20.88.1", 3128),
                                            egress_address="127.20.88.2", hosts_text="", image="x",
                                            user="13:14"))
    assert proxy._container_user() == "13:14"
    if os.geteuid() == 0:
        root = VendorProxy(VendorProxySettings(state_dir=tmp_path, listen=Endpoint("127.20.88.1", 3128),
                                               egress_address="127.20.88.2", hosts_text="", image="x", user="root"))
        assert root._container_user() == "0:0"


def _with_config(config: Path) -> list[str]:
    """Proxy containers (of any state) that mount ``config``: this test's."""
    return [c.short_id for c in _ours() if str(config) in str(c.attrs)]  # type: ignore[attr-defined]


def test_a_running_containers_process_is_found_for_its_start_up_clock(tmp_path: Path, tiny_image: str) -> None:
    # The start-up wait watches the container's processes work (core/startupclock): its init as this
    # host numbers it, confirmed by its control group.
    config = tmp_path / "config"
    config.mkdir()
    container = ProxyContainer(tiny_image, ["sh", "-c", "sleep 600"], config, {}, None, tmp_path / "proxy.log")
    container.start()
    try:
        pid = container.pid
        assert pid is not None and pid != os.getpid()
        assert tree_cpu_seconds(pid) is not None
    finally:
        container.stop(1)
    assert container.pid is None


def test_a_container_whose_command_cannot_run_is_removed(tmp_path: Path, tiny_image: str) -> None:
    # The engine creates the container, then cannot start it: it would be left "created".
    config = tmp_path / "config"
    config.mkdir()
    container = ProxyContainer(tiny_image, ["/no-such-proxy"], config, {}, None, tmp_path / "proxy.log")
    with pytest.raises(ContainerError, match="did not start"):
        container.start()
    assert _with_config(config) == []


async def test_a_container_that_exits_at_start_up_is_removed_and_its_output_quoted(tmp_path: Path,
                                                                                  tiny_image: str) -> None:
    parent = tmp_path / "proxies"
    proxy = VendorProxy(VendorProxySettings(
        state_dir=tmp_path / "state", listen=Endpoint("127.20.88.1", 3128), egress_address="127.20.88.2",
        hosts_text="", image=tiny_image, command="sh -c 'echo FATAL: bye >&2; exit 3'", config_parent=parent))
    with pytest.raises(VendorProxyError, match=r"(?s)exited during start-up; its output:\nFATAL: bye"):
        await proxy.start(startup_limit=30)
    assert not [c for c in _ours() if str(parent) in str(c.attrs)]  # type: ignore[attr-defined]
    assert list(parent.iterdir()) == []


def test_the_owner_labels_decide_what_is_orphaned() -> None:
    me = current_owner()
    assert not orphaned(me.as_labels(LABEL_PREFIX))
    dead = dataclasses.replace(me, pid=dead_pid())
    assert orphaned(dead.as_labels(LABEL_PREFIX))
    assert not orphaned(dataclasses.replace(dead, pid_namespace=me.pid_namespace + 1).as_labels(LABEL_PREFIX))
    assert not orphaned(dataclasses.replace(dead, boot_id="another-boot").as_labels(LABEL_PREFIX))
    assert not orphaned({OWNER_LABEL: str(dead.pid)})  # the old label alone proves nothing


class Created:
    """Proxy containers made (created, never started) with the labels given."""

    def __init__(self, image: str) -> None:
        import docker

        self.client = docker.from_env()
        self.image = image
        self.ids: dict[str, str] = {}

    def make(self, name: str, labels: dict[str, str]) -> None:
        container = self.client.containers.create(self.image, ["sleep", "300"],
                                                  labels={**labels, ROLE_LABEL: "vendor-proxy"})
        self.ids[name] = container.short_id

    def remove(self) -> None:
        import docker

        for short_id in self.ids.values():
            with contextlib.suppress(docker.errors.NotFound):
                self.client.containers.get(short_id).remove(force=True)


@pytest.fixture
def created(tiny_image: str) -> Iterator[Created]:
    made = Created(tiny_image)
    yield made
    made.remove()


def test_the_sweep_removes_only_containers_whose_owner_is_provably_dead(created: Created) -> None:
    me = current_owner()
    dead = dataclasses.replace(me, pid=dead_pid())
    created.make("dead", dead.as_labels(LABEL_PREFIX))
    # a shared engine: another PID namespace's owner, whose pid is nobody here
    created.make("other namespace",
                 dataclasses.replace(dead, pid_namespace=me.pid_namespace + 1).as_labels(LABEL_PREFIX))
    created.make("old label", {OWNER_LABEL: str(dead.pid)})
    created.make("alive", me.as_labels(LABEL_PREFIX))
    sweep_orphans()
    left = {c.short_id for c in _ours()}  # type: ignore[attr-defined]
    assert created.ids["dead"] not in left  # (by this sweep, or another test worker's)
    assert {created.ids[name] for name in ("other namespace", "old label", "alive")} <= left


def test_an_engine_call_may_take_as_long_as_copying_the_image_slowly() -> None:
    """Under vfs a container's create copies the image's root: the SDK's 60 s failed for Squid's
    ~300 MB on a loaded machine. The bound grows with the image and is never under ten minutes."""
    assert start_timeout(300_000_000) == 600.0
    assert start_timeout(2_000_000_000) == 2000.0
