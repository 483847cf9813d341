"""A CAPI machine's bootstrap data on a simulated Debian node's first boot: Giant Swarm's proxy
drop-ins land, but containerd and the kubelet (already running, as on a real first boot) see them
only after the daemon-reload and restarts CAPI templates run; once per instance; bootstrap data
this simulator does not understand is refused, naming what."""

from __future__ import annotations

import base64
import gzip
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import certifi
import pytest

from proxyfleet.simulators.linux.cloudinit import BOOT_FINISHED, UserDataError, parse_user_data
from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
KEY = asyncssh.generate_private_key("ssh-ed25519")
PROXY = "http://proxy.corp.internal:3128"
NO_PROXY = "127.0.0.1,localhost,svc,local,10.96.0.0/12"
# giantswarm/cluster's files/etc/systemd/http-proxy.conf, rendered
DROP_IN = "".join(f'Environment="{name}={value}"\n' for name, value in (
    ("HTTP_PROXY", PROXY), ("HTTPS_PROXY", PROXY), ("NO_PROXY", NO_PROXY),
    ("http_proxy", PROXY), ("https_proxy", PROXY), ("no_proxy", NO_PROXY)))
DROP_IN = "[Service]\n" + DROP_IN


def user_data(*, restart: bool) -> str:
    encoded = base64.b64encode(DROP_IN.encode()).decode()
    files = "".join(f"""
- path: /etc/systemd/system/{unit}.service.d/http-proxy.conf
  permissions: "0644"
  encoding: base64
  content: {encoded}""" for unit in ("containerd", "kubelet"))
    commands = "\n- systemctl daemon-reload\n- [systemctl, restart, containerd]\n- systemctl restart kubelet" if restart \
        else "\n- echo no restarts"
    return f"#cloud-config\nwrite_files:{files}\nruncmd:{commands}\n"


async def started(tmp_path: Path, data: str) -> LinuxNode:
    node = LinuxNode(LinuxNodeConfig("capi-worker", "127.0.0.1", 0, tmp_path / "capi-worker",
                                     asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()],
                                     DEBIAN_NODE, Path(certifi.where()).read_bytes(), user_data=data))
    await node.start()
    return node


@pytest.fixture
async def nodes() -> AsyncIterator[list[LinuxNode]]:
    if CANNOT_MOUNT is not None:
        pytest.skip(CANNOT_MOUNT)
    running: list[LinuxNode] = []
    yield running
    for node in running:
        await node.stop()


async def test_the_proxy_drop_ins_reach_the_services_after_the_bootstraps_restarts(
        tmp_path: Path, nodes: list[LinuxNode]) -> None:
    node = await started(tmp_path, user_data(restart=True))
    nodes.append(node)
    for unit in ("containerd.service", "kubelet.service"):
        environment = node.model.systemd.running[unit].environment
        assert environment["HTTPS_PROXY"] == PROXY and environment["no_proxy"] == NO_PROXY, unit
    assert (node.root / "etc/systemd/system/kubelet.service.d/http-proxy.conf").read_text() == DROP_IN
    assert (node.root / BOOT_FINISHED.lstrip("/")).exists()


async def test_without_them_the_running_services_miss_the_proxy_until_a_reboot(
        tmp_path: Path, nodes: list[LinuxNode]) -> None:
    node = await started(tmp_path, user_data(restart=False))
    nodes.append(node)
    assert "HTTPS_PROXY" not in node.model.systemd.running["containerd.service"].environment
    assert (node.root / "var/log/cloud-init-output.log").read_text() == "no restarts\n"
    finished = (node.root / BOOT_FINISHED.lstrip("/")).read_text()
    node.request_reboot()
    await wait_until(lambda: len(node.boots) == 2 and node.is_listening, what="the node back from its reboot")
    assert node.model.systemd.running["containerd.service"].environment["HTTPS_PROXY"] == PROXY
    assert (node.root / BOOT_FINISHED.lstrip("/")).read_text() == finished  # once per instance


@pytest.mark.parametrize(("text", "message"), [
    ("write_files: []", "must start with '#cloud-config'"),
    ("#cloud-config\npackages: [curl]\n", r"cloud-init module\(s\) packages not modelled"),
    ("#cloud-config\nwrite_files:\n- path: /x\n  defer: true\n", r"write_files\[0\]: defer not modelled"),
    ("#cloud-config\nwrite_files:\n- path: /x\n  owner: core:core\n", "owner 'core:core' not modelled"),
    ("#cloud-config\nwrite_files:\n- path: x\n", "path must be an absolute path"),
    ("#cloud-config\nwrite_files:\n- path: /x\n  encoding: zip\n", "unknown encoding 'zip'"),
    ("#cloud-config\nwrite_files:\n- path: /x\n  permissions: rw\n", "is not an octal mode"),
    ("#cloud-config\nruncmd:\n- {a: b}\n", r"runcmd\[0\] must be a string or a list of strings"),
    ("#cloud-config\n: [\n", "user data is not YAML"),
])
def test_bootstrap_data_it_does_not_understand_is_refused(text: str, message: str) -> None:
    with pytest.raises(UserDataError, match=message):
        parse_user_data(text)


def test_encodings_decode_as_cloud_init_decodes_them() -> None:
    packed = base64.b64encode(gzip.compress(b"[Service]\n")).decode()
    parsed = parse_user_data(f"#cloud-config\nwrite_files:\n- path: /a\n  encoding: gz+b64\n  content: {packed}\n"
                             "- path: /b\n  content: plain\n  permissions: '0600'\n  append: true\n"
                             "runcmd:\n- [echo, it's]\n")
    assert [(f.path, f.content, f.mode, f.append) for f in parsed.write_files] == [
        ("/a", b"[Service]\n", 0o644, False), ("/b", b"plain", 0o600, True)]
    assert parsed.runcmd == ("echo 'it'\"'\"'s'",)
