"""SSH host keys: trust on first use pinned in a ConfigMap (concurrent first contacts share one
write, a different key is never overwritten), or a strict known_hosts file that refuses unlisted
hosts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncssh
import pytest
from kubernetes import client

from proxyfleet.harness.reconciler.hostkeys import PINS_CONFIGMAP, HostKeyPins, HostKeyPolicyError, KnownHosts

NAMESPACE = "openshift-windows-machine-config-operator"


def public_key() -> str:
    return asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode().strip()


async def test_first_contacts_are_pinned_together_and_then_expected(api: client.ApiClient) -> None:
    pins = HostKeyPins(api, NAMESPACE)
    keys = {f"127.20.0.{i}": public_key() for i in range(1, 21)}
    assert pins.expectation("127.20.0.1", 22, {}).first_contact
    await asyncio.gather(*(pins.pin(address, key) for address, key in keys.items()))
    assert pins.writes <= 2  # twenty first contacts, not twenty writes
    stored = await asyncio.to_thread(client.CoreV1Api(api).read_namespaced_config_map, PINS_CONFIGMAP, NAMESPACE)
    assert stored.data == keys
    expected = pins.expectation("127.20.0.1", 22, {PINS_CONFIGMAP: {"data": stored.data}})
    assert expected.key == keys["127.20.0.1"] and not expected.first_contact
    await pins.close()


async def test_a_different_key_for_a_pinned_host_is_refused(api: client.ApiClient) -> None:
    pins = HostKeyPins(api, NAMESPACE)
    await pins.pin("127.20.0.1", public_key())
    with pytest.raises(HostKeyPolicyError) as refused:
        await pins.pin("127.20.0.1", public_key())
    assert refused.value.reason == "HostKeyMismatch"
    with pytest.raises(HostKeyPolicyError) as invalid:
        await pins.pin("bad address/with slash", public_key())
    assert invalid.value.reason == "HostKeyNotPinned"
    await pins.close()


def test_a_known_hosts_file_is_strict(tmp_path: Path) -> None:
    key = public_key()
    path = tmp_path / "known_hosts"
    path.write_text(f"[127.20.0.1]:2222 {key}\n")
    pins = HostKeyPins(client.ApiClient(), NAMESPACE, KnownHosts(path))
    assert pins.expectation("127.20.0.1", 2222, {}).key == key
    with pytest.raises(HostKeyPolicyError) as unknown:
        pins.expectation("127.20.0.2", 2222, {})
    assert unknown.value.reason == "HostKeyUnknown"
    # asyncssh skips lines it cannot parse: such a host is then unlisted, and refused (fails closed)
    path.write_text("127.20.0.1 ssh-ed25519 !!!not-base64!!!\n")
    with pytest.raises(HostKeyPolicyError, match="not in the known hosts file"):
        HostKeyPins(client.ApiClient(), NAMESPACE, KnownHosts(path)).expectation("127.20.0.1", 22, {})
    with pytest.raises(HostKeyPolicyError, match="cannot read known hosts"):
        KnownHosts(tmp_path / "missing")
