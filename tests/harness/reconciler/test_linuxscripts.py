"""The reference reconciler's shell on a simulated Linux node over real SSH: observe what it owns,
apply the difference, and after the reboot the MCO does for a proxy change, CRI-O and the kubelet
run with the proxy and the extracted bundle holds the proxy's CA; with the proxy gone, so is all
of it. Nothing changed is written twice."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import certifi
import pytest
import trustme

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.harness.reconciler.linuxfiles import DEBIAN, PROXY_ENV, RHCOS, Flavour, node_files
from proxyfleet.harness.reconciler.linuxscripts import (
    ObservationError,
    apply_script,
    changed_files,
    observe_script,
    parse_observation,
)
from proxyfleet.simulators.linux.node import LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE
from proxyfleet.simulators.linux.truststores import DEBIAN as DEBIAN_TRUST
from proxyfleet.simulators.linux.truststores import RHCOS as RHCOS_TRUST
from tests.simulators.linux.sessions import run_on
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
KEY = asyncssh.generate_private_key("ssh-ed25519")
PROXY = {"HTTP_PROXY": "http://user:p%40ss@proxy.corp:3128", "HTTPS_PROXY": "http://user:p%40ss@proxy.corp:3128",
         "NO_PROXY": ".cluster.local,.svc,api-int.lab.example.com"}
PROXY_CA = trustme.CA(organization_name="corporate proxy").cert_pem.bytes().decode()


@pytest.fixture(params=[(RHCOS, RHCOS_NODE, RHCOS_TRUST.bundle), (DEBIAN, DEBIAN_NODE, DEBIAN_TRUST.bundle)],
                ids=["rhcos", "debian"])
async def node(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[LinuxNode, Flavour, str]]:
    if CANNOT_MOUNT is not None:
        pytest.skip(CANNOT_MOUNT)
    ours, simulated, bundle = request.param
    running = LinuxNode(LinuxNodeConfig("worker-a", "127.0.0.1", 0, tmp_path / "worker-a",
                                        asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()],
                                        simulated, Path(certifi.where()).read_bytes()))
    await running.start()
    try:
        yield running, ours, bundle
    finally:
        await running.stop()


run = functools.partial(run_on, key=KEY)


async def reconcile(node: LinuxNode, flavour: Flavour, environment: dict[str, str | None], bundle: str) -> list[str]:
    """One pass: observe, apply what differs, reboot if anything did; the paths changed."""
    wanted = node_files(environment, bundle, flavour)
    seen = await run(node, observe_script(list(wanted), flavour.services))
    assert seen.exit_status == 0, seen.stderr
    observed = parse_observation(seen.stdout)
    assert observed.os_id == flavour.name and observed.boot_id == node.boots[-1].boot_id
    changes = changed_files(wanted, observed)
    if changes:
        apply = apply_script(changes, flavour)
        # the contents (the password's too) travel on stdin only, never in the command's text
        assert bool(apply.stdin) == any(spec.content is not None for spec in changes.values())
        assert not any(line in apply.command for line in apply.stdin.splitlines())
        applied = await run(node, apply.command, apply.stdin)
        assert applied.exit_status == 0, applied.stderr
        boots = len(node.boots)
        await run(node, "systemctl reboot")
        await wait_until(lambda: len(node.boots) > boots and node.is_listening, what="the node back from its reboot")
    return sorted(changes)


async def test_a_proxy_reaches_the_runtime_and_the_kubelet_and_goes_again(node: tuple[LinuxNode, Flavour, str]) -> None:
    linux, flavour, bundle_path = node
    changed = await reconcile(linux, flavour, dict(PROXY), PROXY_CA)
    assert len(changed) == 4 and PROXY_ENV in changed
    for service in flavour.services:
        environment = linux.model.systemd.running[service].environment
        assert environment["HTTPS_PROXY"] == PROXY["HTTPS_PROXY"] and environment["http_proxy"] == PROXY["HTTP_PROXY"]
        assert environment["NO_PROXY"] == PROXY["NO_PROXY"]
    extracted = certificates_in_bundle((linux.root / bundle_path.lstrip("/")).read_bytes())
    proxy_ca = certificates_in_bundle(PROXY_CA.encode())[0]
    assert proxy_ca.thumbprint in {c.thumbprint for c in extracted}
    assert (linux.root / PROXY_ENV.lstrip("/")).stat().st_mode & 0o777 == 0o600
    assert await reconcile(linux, flavour, dict(PROXY), PROXY_CA) == []  # nothing differs: nothing written
    gone = await reconcile(linux, flavour, dict.fromkeys(PROXY), "")
    assert len(gone) == 4
    for service in flavour.services:
        assert not {"HTTP_PROXY", "http_proxy"} & set(linux.model.systemd.running[service].environment)
    extracted = certificates_in_bundle((linux.root / bundle_path.lstrip("/")).read_bytes())
    assert proxy_ca.thumbprint not in {c.thumbprint for c in extracted}


def test_an_answer_that_is_not_an_observation_is_refused() -> None:
    with pytest.raises(ObservationError, match="not an observation line: 'bash: sha256sum: not found'"):
        parse_observation("os rhcos\nboot 1-2\nbash: sha256sum: not found\n")
    with pytest.raises(ObservationError, match="names no os-release ID"):
        parse_observation("file - - /etc/mco/proxy.env\n")
