"""A vendor proxy image run by the lab: host network, extra hosts, the configuration mounted,
output kept, removed on every exit — also after its owner was killed outright."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.harness.lab.vendor import VendorProxy, VendorProxyError, VendorProxySettings
from proxyfleet.harness.lab.vendorcontainer import (
    ROLE_LABEL,
    ProxyContainer,
    engine_available,
    sweep_orphans,
)
from proxyfleet.simulators.network import Endpoint


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
    assert short_id in sweep_orphans()
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
