from __future__ import annotations

import fcntl
import linecache
import os
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import FrameType

import pytest
import trustme
from kubernetes import client, config

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.fleet import Fleet, FleetSettings
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import new_machine

pytest_plugins = ["pytester"]


@pytest.fixture
def machine(tmp_path: Path) -> WindowsMachine:
    return new_machine(tmp_path / "node")


@pytest.fixture(scope="session")
def public_ca() -> trustme.CA:
    return trustme.CA(organization_name="proxyfleet public roots")


@pytest.fixture
async def fleet(tmp_path: Path, public_ca: trustme.CA) -> AsyncIterator[Fleet]:
    """Two nodes whose OpenSSH default shell is PowerShell (exec requests are PowerShell text)."""
    root = Certificate.from_pem(public_ca.cert_pem.bytes())
    settings = FleetSettings(nodes=2, state_dir=tmp_path / "fleet", shutdown_delay=0.05,
                             reboot_duration=0.2, public_roots=[root], default_shell="powershell")
    async with Fleet(settings) as running:
        yield running


@pytest.fixture
async def cmd_fleet(tmp_path: Path, public_ca: trustme.CA) -> AsyncIterator[Fleet]:
    """Two nodes as Windows ships them: OpenSSH's default shell is cmd.exe."""
    root = Certificate.from_pem(public_ca.cert_pem.bytes())
    settings = FleetSettings(nodes=2, state_dir=tmp_path / "cmd-fleet", shutdown_delay=0.05,
                             reboot_duration=0.2, public_roots=[root])
    async with Fleet(settings) as running:
        yield running


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[ControlPlane]:
    """An embedded control plane (OpenShift's objects installed, no nodes) with quick bookmarks."""
    ca = trustme.CA()
    running = ControlPlane(ControlPlaneSettings(tmp_path / "cluster", ca.cert_pem.bytes().decode(),
                                                bookmark_interval=0.2, node_monitor_period=0.2))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
def api(plane: ControlPlane) -> Iterator[client.ApiClient]:
    """The official client, through the control plane's kubeconfig."""
    api_client = config.new_client_from_config(config_file=str(plane.kubeconfig_path))  # type: ignore[no-untyped-call]
    yield api_client
    api_client.close()


@pytest.fixture(scope="session")
def squid_image() -> str:
    """A Squid (OpenSSL flavour) image built from Debian packages; skips where it cannot be had."""
    from tests.images import SQUID_IMAGE, SQUID_PACKAGES, ImageUnavailable, debian_image

    try:
        return debian_image(SQUID_IMAGE, SQUID_PACKAGES)
    except ImageUnavailable as exc:
        pytest.skip(f"needs a container engine and a Squid image: {exc}")


@pytest.fixture
def well_known_block() -> Iterator[None]:
    """Held for the whole of a test whose lab takes the machine's one well-known address block (a
    ``--proxy-url`` lab), so two such tests on different xdist workers run one after the other.
    (``xdist_group`` would say the same, but pytest-xdist 3.8 under pytest 9 does not group.)"""
    with open(Path(tempfile.gettempdir()) / "proxyfleet-tests-well-known-block.lock", "w") as handle:
        deadline = time.monotonic() + 900
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError("another test kept the well-known address block for 15 minutes") from None
                time.sleep(0.5)  # the other test holds it: ask again
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _busy_threads(grace: float) -> list[threading.Thread]:
    """Threads that would keep this process from exiting (not daemons, not an idle pool worker
    waiting for work), once ``grace`` seconds have let finishing ones end."""
    deadline = time.monotonic() + grace
    while True:
        frames = sys._current_frames()
        busy = [t for t in threading.enumerate()
                if t is not threading.main_thread() and not t.daemon and t.is_alive()
                and not _idle_pool_worker(frames.get(t.ident or -1))]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.2)  # a thread finishing its last call: ask again


def _idle_pool_worker(frame: FrameType | None) -> bool:
    """Whether a thread's stack is a ``concurrent.futures`` pool worker waiting for its next call:
    those end when the interpreter shuts the pool down."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_worker" and code.co_filename.endswith(os.path.join("concurrent", "futures", "thread.py")):
            return "work_queue.get(" in linecache.getline(code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return False


def _stacks(threads: list[threading.Thread]) -> str:
    frames = sys._current_frames()
    return "\n".join(f"thread {t.name!r}:\n" + "".join(traceback.format_stack(frames[t.ident]))
                     for t in threads if t.ident in frames)


@pytest.fixture(scope="session", autouse=True)
def no_thread_left_busy() -> Iterator[None]:
    """A thread still busy when a process's last test is done would hang its exit (the interpreter
    joins pool threads) until CI's time ran out, naming nothing: it fails that test instead, with
    the thread's stack."""
    yield
    busy = _busy_threads(grace=120)
    if busy:
        pytest.fail(f"{len(busy)} thread(s) still busy after the last test; they would block this "
                    f"process's exit:\n{_stacks(busy)}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Where a busy thread outlived even the failure above, say whose it is and exit rather than
    wait for it forever (the run has already failed)."""
    busy = _busy_threads(grace=5)
    if busy:
        os.write(2, f"exiting past {len(busy)} busy thread(s):\n{_stacks(busy)}\n".encode())
        os._exit(1)


def pytest_configure(config: pytest.Config) -> None:
    """The suite's verdicts must not depend on where it runs: ``CI`` turns on defaults meant for
    CI jobs (``--wait-restored`` waits 15 minutes for a cluster's rollout), and every process a
    test starts inherits it. The tests that are about those defaults set ``CI`` themselves."""
    os.environ.pop("CI", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that wait minutes by design go first: xdist hands tests out in this order, and one of
    them started last would make the whole run as long as it."""
    items.sort(key=lambda item: item.get_closest_marker("longest") is None)
