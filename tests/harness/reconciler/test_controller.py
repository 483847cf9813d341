"""The reference reconciler against the embedded control plane and the simulated fleet: every
workflow of DESIGN.md §1, reboots bounded by maxUnavailable, resync without changes, unreachable
nodes, a restart mid-reboot, removal and deconfiguration, and injection attempts."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
from collections.abc import AsyncIterator
from typing import Any

import asyncssh
import pytest
import trustme
from kubernetes import client

from proxyfleet.core.certificates import Certificate
from proxyfleet.core.contract import INSTANCES, OPERATOR_NAMESPACE, PROXY, STATE_LABEL
from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.reconciler import Reconciler, ReconcilerSettings, make_reconciler
from proxyfleet.harness.reconciler.controller import NodeRecord
from proxyfleet.harness.reconciler.draining import DrainTimeout
from proxyfleet.harness.reconciler.hostkeys import PINS_CONFIGMAP
from proxyfleet.harness.reconciler.reporting import CONFIG_HASH, REBOOT_PENDING
from proxyfleet.harness.reconciler.watching import ClusterWatch
from proxyfleet.simulators.windows.node import WindowsNode
from tests.support import wait_until

PROXY_URL = "http://proxy.corp.internal:3128"


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    async with Lab(LabSettings(nodes=3, proxy=False, reboot_duration=0.3, shutdown_delay=0.15)) as running:
        await admin.set_ssh_key(running.api(), running.fleet.client_key_path.read_bytes())
        yield running


def reconciler(lab: Lab, **settings: Any) -> Reconciler:
    options: dict[str, Any] = dict(ssh_port=lab.fleet.port, resync_period=2.0, max_unavailable=1, settle_delay=0.3,
                                   reboot_timeout=30, backoff_base=0.2, backoff_max=1.0)
    variant = settings.pop("variant", None)
    options.update(settings)
    return make_reconciler(lab.api(), ReconcilerSettings(**options), variant)


def nodes(lab: Lab) -> list[WindowsNode]:
    return list(lab.fleet.nodes)


async def add_instances(lab: Lab, members: list[WindowsNode]) -> None:
    await admin.set_instances(lab.api(), [(n.address, "Administrator") for n in members])


async def configure_proxy(lab: Lab, ca: trustme.CA, no_proxy: str = "registry.corp.internal",
                          proxy: str = PROXY_URL) -> None:
    """Set the proxy and wait until the control plane has published it in Proxy status."""
    await admin.set_trusted_ca(lab.api(), ca.cert_pem.bytes().decode())
    await admin.set_proxy(lab.api(), http_proxy=proxy, https_proxy=proxy, no_proxy=no_proxy, trusted_ca="corp-ca")

    async def published() -> bool:
        status = await admin.proxy_status(lab.api())
        return status.get("httpsProxy") == proxy and f",{no_proxy}" in "," + status.get("noProxy", "")

    await wait_until(published, what="Proxy status")


def machine_env(node: WindowsNode) -> dict[str, str | None]:
    values = node.machine.machine_environment()
    return {k: values.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")}


async def status_env(lab: Lab) -> dict[str, str | None]:
    status = await admin.proxy_status(lab.api())
    return {"HTTP_PROXY": status.get("httpProxy"), "HTTPS_PROXY": status.get("httpsProxy"),
            "NO_PROXY": status.get("noProxy")}


async def converged(lab: Lab, rec: Reconciler, members: list[WindowsNode], state: str = "configured") -> bool:
    """Every member's machine env equals Proxy status and its record shows ``state``."""
    wanted = await status_env(lab)
    if state == "deconfigured":
        wanted = dict.fromkeys(wanted)
    for node in members:
        record = rec.records.get(node.address)
        if record is None or record.state != state or machine_env(node) != wanted:
            return False
    return True


def thumbprint(ca: trustme.CA) -> str:
    return Certificate.from_pem(ca.cert_pem.bytes()).thumbprint


def boots(node: WindowsNode) -> int:
    return len(node.machine.boots)


@pytest.mark.slow
async def test_runtime_add_change_rotation_and_removal(lab: Lab) -> None:
    members = nodes(lab)
    first_ca, second_ca = trustme.CA(), trustme.CA()
    public = thumbprint(lab.public_ca)
    await add_instances(lab, members)
    async with reconciler(lab, max_unavailable=2) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="a proxy-less fleet")
        assert all(boots(n) == 1 for n in members)  # nothing to change: no reboot

        await configure_proxy(lab, first_ca)  # runtime add
        await wait_until(lambda: converged(lab, rec, members), what="the proxy on every node")
        for node in members:
            assert boots(node) == 2  # exactly one reboot for the change
            roots = node.machine.stores.machine_root.certificates
            assert thumbprint(first_ca) in roots and public in roots
            environment = node.process_environment("containerd")
            assert environment is not None and environment["HTTPS_PROXY"] == PROXY_URL
        assert rec.max_concurrent_reboots <= 2
        assert all(r.round_trips == [4] for r in rec.records.values()), rec.records

        reboots = [boots(n) for n in members]
        await admin.set_trusted_ca(lab.api(), second_ca.cert_pem.bytes().decode())  # rotation

        async def rotated() -> bool:
            return all(thumbprint(second_ca) in n.machine.stores.machine_root.certificates and
                       thumbprint(first_ca) not in n.machine.stores.machine_root.certificates for n in members)

        await wait_until(rotated, what="the CA rotation")
        await wait_until(lambda: converged(lab, rec, members), what="rotation settled")
        assert all(public in n.machine.stores.machine_root.certificates for n in members)  # never touched
        assert [boots(n) for n in members] == reboots  # certificates only: applied live, no reboot

        await configure_proxy(lab, second_ca, no_proxy=".corp", proxy="http://proxy2.corp.internal:8080")
        await wait_until(lambda: converged(lab, rec, members), what="the proxy change")
        assert members[0].process_environment("kubelet")["HTTP_PROXY"] == "http://proxy2.corp.internal:8080"  # type: ignore[index]

        reboots = [boots(n) for n in members]
        await admin.set_proxy(lab.api())  # removal
        await wait_until(lambda: _status_empty(lab), what="an empty Proxy status")
        await wait_until(lambda: all(machine_env(n) == dict.fromkeys(machine_env(n)) for n in members), what="the variables removed")
        await wait_until(lambda: converged(lab, rec, members), what="removal settled")
        for node, before in zip(members, reboots, strict=True):
            assert boots(node) == before + 1
            roots = node.machine.stores.machine_root.certificates
            assert thumbprint(second_ca) not in roots and public in roots
            assert "HTTPS_PROXY" not in (node.process_environment("containerd") or {})


@pytest.mark.slow
async def test_install_time_resync_and_max_unavailable(lab: Lab) -> None:
    members = nodes(lab)
    await configure_proxy(lab, trustme.CA())
    await add_instances(lab, members)  # instances join a cluster that already has a proxy
    async with reconciler(lab, max_unavailable=1) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="nodes joining configured")
        assert rec.max_concurrent_reboots == 1
        downtime = sorted((o.down_at, o.up_at) for n in members for o in n.outages)
        for (_, up), (down, _) in itertools.pairwise(downtime):
            assert up is not None and up <= down  # one node down at a time
        reboots = [boots(n) for n in members]
        connections = [n.ssh_connections for n in members]
        commands = [n.ssh_commands for n in members]
        processed = rec.queue.processed
        await wait_until(lambda: rec.queue.processed >= processed + 2 * len(members),
                         what="two resyncs")
        assert [boots(n) for n in members] == reboots  # a resync changes nothing
        assert [n.ssh_connections for n in members] == connections  # over the connection kept open
        assert all(n.ssh_commands > before for n, before in zip(members, commands, strict=True))
        pins = await asyncio.to_thread(client.CoreV1Api(lab.api()).read_namespaced_config_map, PINS_CONFIGMAP,
                                       OPERATOR_NAMESPACE)
        assert pins.data == {n.address: n.host_key_openssh for n in members}  # pinned on first contact
        for node in lab_nodes_objects(await admin.nodes(lab.api())):
            annotations = node["metadata"]["annotations"]
            assert annotations[CONFIG_HASH] and not any("host-key" in a for a in annotations)
            assert REBOOT_PENDING not in annotations and node["metadata"]["labels"][STATE_LABEL] == "configured"
            assert not node["spec"].get("unschedulable")


def lab_nodes_objects(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in items if n["metadata"]["name"].startswith("win-")]


async def _status_empty(lab: Lab) -> bool:
    return not (await admin.proxy_status(lab.api())).get("httpsProxy")


async def _status_ready(lab: Lab) -> bool:
    return bool((await admin.proxy_status(lab.api())).get("httpsProxy"))


async def test_an_unreachable_node_converges_when_it_returns(lab: Lab) -> None:
    members = nodes(lab)
    await add_instances(lab, members)
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="initial state")
        await members[2].go_offline()
        await configure_proxy(lab, trustme.CA())
        await wait_until(lambda: converged(lab, rec, members[:2]), what="the reachable nodes")
        assert rec.records[members[2].address].state == "unreachable"
        await members[2].come_online()
        await wait_until(lambda: converged(lab, rec, members), what="the returning node")


async def test_a_restart_mid_reboot_does_not_reboot_twice(lab: Lab) -> None:
    members = nodes(lab)[:1]
    await add_instances(lab, members)
    node = members[0]
    node.config.reboot_duration = 2.0
    await configure_proxy(lab, trustme.CA())
    first = reconciler(lab)
    await first.start()
    await wait_until(lambda: not node.is_listening and boots(node) == 1, what="the reboot to start")
    await first.stop()  # the reconciler dies while the node reboots
    assert lab_nodes_objects(await admin.nodes(lab.api()))[0]["metadata"]["annotations"][REBOOT_PENDING]
    async with reconciler(lab) as second:
        await wait_until(lambda: converged(lab, second, members), what="the resumed reconcile")
        assert boots(node) == 2  # the reboot that was in flight, and no second one
        assert second.records[node.address].reboots == 0


@pytest.mark.slow
async def test_deconfigure_when_an_instance_is_removed(lab: Lab) -> None:
    members = nodes(lab)
    ca = trustme.CA()
    await add_instances(lab, members)
    await configure_proxy(lab, ca)
    async with reconciler(lab, max_unavailable=3) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="configured")
        await add_instances(lab, members[:2])
        removed = members[2]
        await wait_until(lambda: rec.records[removed.address].state == "deconfigured",
                         what="deconfiguration")
        assert machine_env(removed) == dict.fromkeys(machine_env(removed))
        assert thumbprint(ca) not in removed.machine.stores.machine_root.certificates
        assert thumbprint(lab.public_ca) in removed.machine.stores.machine_root.certificates
        assert machine_env(members[0])["HTTPS_PROXY"] == PROXY_URL


async def _events(lab: Lab, reason: str) -> list[Any]:
    events = await asyncio.to_thread(client.CoreV1Api(lab.api()).list_event_for_all_namespaces)
    return [e for e in events.items if e.reason == reason and e.type == "Warning"]


async def _rogue_takes_over(lab: Lab, victim: WindowsNode) -> WindowsNode:
    """A different SSH server (its own host key) answers on the victim's address and port."""
    await victim.stop()
    rogue_config = dataclasses.replace(victim.config, name="rogue", state_dir=victim.config.state_dir.parent / "rogue",
                                       host_key=asyncssh.generate_private_key("ssh-ed25519"))
    rogue = WindowsNode(rogue_config)
    await rogue.start()
    return rogue


async def test_a_rogue_host_on_a_pinned_address_gets_nothing(lab: Lab) -> None:
    members = nodes(lab)[:2]
    await add_instances(lab, members)
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="first contact pins both")
    rogue = await _rogue_takes_over(lab, members[0])
    try:
        await configure_proxy(lab, trustme.CA(), proxy="http://user:s3cret@proxy.corp.internal:3128")
        async with reconciler(lab) as rec:
            await wait_until(lambda: converged(lab, rec, members[1:]), what="the honest node")
            await wait_until(lambda: rec.records[members[0].address].state == "failed", what="the refusal")
            assert "not the one pinned" in rec.records[members[0].address].message
            await wait_until(lambda: _events(lab, "HostKeyMismatch"), what="a HostKeyMismatch Warning")
            attempts = rogue.ssh_connections
            processed = rec.queue.processed
            await wait_until(lambda: rec.queue.processed >= processed + 4, what="resyncs")
        assert rogue.ssh_connections == attempts  # all traffic to it stopped
        assert list(rogue.command_lines) == [] and rogue.ssh_commands == 0  # not one command
        assert not rogue.machine.filesystem.exists("C:\\Users\\Administrator\\.proxyfleet")  # no data file
        assert rogue.machine.machine_environment().get("HTTPS_PROXY") is None
    finally:
        await rogue.stop()


async def test_a_kubelet_cannot_reopen_the_first_contact_window(lab: Lab) -> None:
    members = nodes(lab)[:1]
    await add_instances(lab, members)
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="first contact")
    (lab.state_dir / "cluster-ca.pem").write_bytes(lab.control_plane.ca_pem)
    configuration = client.Configuration()
    configuration.host = lab.control_plane.url
    configuration.ssl_ca_cert = str(lab.state_dir / "cluster-ca.pem")
    configuration.api_key = {"authorization": f"Bearer {lab.control_plane.kubelet_token(members[0].name)}"}
    kubelet = client.ApiClient(configuration)
    with pytest.raises(client.exceptions.ApiException) as refused:
        await asyncio.to_thread(client.CoreV1Api(kubelet).delete_namespaced_config_map, PINS_CONFIGMAP,
                                OPERATOR_NAMESPACE)
    assert refused.value.status == 403
    kubelet.close()


async def test_strict_known_hosts_refuse_unlisted_hosts_without_connecting(lab: Lab, tmp_path: Any) -> None:
    members = nodes(lab)
    listed, unlisted = members[:2], members[2]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("".join(f"[{n.address}]:{n.port} {n.host_key_openssh}\n" for n in listed))
    await add_instances(lab, members)
    before = unlisted.ssh_connections
    await configure_proxy(lab, trustme.CA())
    async with reconciler(lab, known_hosts=known_hosts) as rec:
        await wait_until(lambda: converged(lab, rec, listed), what="the listed nodes")
        await wait_until(lambda: rec.records.get(unlisted.address) is not None
                         and rec.records[unlisted.address].state == "failed", what="the refusal")
        await wait_until(lambda: _events(lab, "HostKeyUnknown"), what="a HostKeyUnknown Warning")
    assert unlisted.ssh_connections == before  # never even connected to
    assert machine_env(unlisted)["HTTPS_PROXY"] is None


async def test_metacharacters_in_proxy_values_are_stored_verbatim(lab: Lab) -> None:
    """Quotes, ``$( )`` and ``;`` survive Go's url.Parse (so CNO accepts them) and must reach the node
    as data; if the reconciler ever interpolated them into PowerShell the node would reboot again."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    nasty = "http://o'brien:p$(Restart-Computer)';x@proxy.corp.internal:3128"
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="initial state")
        await admin.set_trusted_ca(lab.api(), trustme.CA().cert_pem.bytes().decode())
        await admin.set_proxy(lab.api(), http_proxy=nasty, https_proxy=nasty, no_proxy=".corp", trusted_ca="corp-ca")
        await wait_until(lambda: _status_ready(lab), what="a status")
        await wait_until(lambda: converged(lab, rec, members), what="the verbatim values")
        assert machine_env(node)["HTTPS_PROXY"] == nasty
        assert node.process_environment("containerd")["HTTP_PROXY"] == nasty  # type: ignore[index]
        assert boots(node) == 2  # the one reboot for the change; the $( ) never ran


async def test_the_unquoted_values_variant_executes_what_it_is_given(lab: Lab) -> None:
    """The check above can fail: the broken variant lets ``$(Restart-Computer)`` run on the node."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    nasty = "http://o'brien:p$(Restart-Computer)';x@proxy.corp.internal:3128"
    async with reconciler(lab, variant="unquoted-values") as rec:
        await wait_until(lambda: converged(lab, rec, members), what="initial state")
        await admin.set_trusted_ca(lab.api(), trustme.CA().cert_pem.bytes().decode())
        await admin.set_proxy(lab.api(), http_proxy=nasty, https_proxy=nasty, no_proxy=".corp", trusted_ca="corp-ca")
        await wait_until(lambda: machine_env(node)["HTTPS_PROXY"] is not None, what="a value written")
        assert machine_env(node)["HTTPS_PROXY"] != nasty  # the subexpression was evaluated, not stored


async def test_values_the_control_plane_would_refuse_are_stored_verbatim_or_refused(lab: Lab) -> None:
    """The reconciler does not rely on CNO's validation: with the operator scaled down, status is
    written by hand with quotes, backticks, ``$( )``, ``;`` and a newline."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    custom = client.CustomObjectsApi(lab.api())
    await configure_proxy(lab, trustme.CA())
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="the proxy with its bundle")
        await lab.control_plane.proxy_controller.stop()  # status is now whatever is written to it
        nasty = 'http://us"er:p`a$(Restart-Computer -Force)@proxy.corp.internal:3128'
        nasty_no_proxy = "a.corp;$(Restart-Computer),`b.corp,'c.corp'"
        await asyncio.to_thread(custom.patch_cluster_custom_object_status, *PROXY,
                                {"status": {"httpsProxy": nasty, "noProxy": nasty_no_proxy}})
        await wait_until(lambda: machine_env(node)["HTTPS_PROXY"] == nasty, what="the verbatim value")
        await wait_until(lambda: converged(lab, rec, members), what="the change settled")
        assert machine_env(node)["NO_PROXY"] == nasty_no_proxy
        assert boots(node) == 3  # one reboot per change; nothing executed
        await asyncio.to_thread(custom.patch_cluster_custom_object_status, *PROXY,
                                {"status": {"httpsProxy": "http://proxy.corp:3128\nRestart-Computer -Force"}})
        await wait_until(lambda: rec.records[node.address].state == "failed", what="refusal")
        assert "control characters" in rec.records[node.address].message
        assert machine_env(node)["HTTPS_PROXY"] == nasty and boots(node) == 3  # nothing applied

        async def warned() -> bool:  # the Event is written just after the record turns "failed"
            events = await asyncio.to_thread(client.CoreV1Api(lab.api()).list_namespaced_event, "default")
            return any(e.reason == "UnsafeValue" and e.type == "Warning" for e in events.items)

        await wait_until(warned, what="an UnsafeValue Warning event")


async def test_trusted_ca_is_requested_and_restored(lab: Lab) -> None:
    await add_instances(lab, nodes(lab)[:1])
    core = client.CoreV1Api(lab.api())
    namespace = OPERATOR_NAMESPACE

    async def labelled() -> bool:
        try:
            configmap = await asyncio.to_thread(core.read_namespaced_config_map, "trusted-ca", namespace)
        except client.exceptions.ApiException:
            return False
        return (configmap.metadata.labels or {}).get("config.openshift.io/inject-trusted-cabundle") == "true"

    async with reconciler(lab):
        await configure_proxy(lab, trustme.CA())
        await wait_until(labelled, what="trusted-ca created")
        await asyncio.to_thread(core.delete_namespaced_config_map, "trusted-ca", namespace)
        await wait_until(labelled, what="trusted-ca re-created")
        await asyncio.to_thread(core.patch_namespaced_config_map, "trusted-ca", namespace,
                                {"metadata": {"labels": {"config.openshift.io/inject-trusted-cabundle": None}}})
        await wait_until(labelled, what="the label restored")


async def test_watches_survive_410(lab: Lab) -> None:
    members = nodes(lab)[:1]
    await add_instances(lab, members)
    async with reconciler(lab) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="initial state")
        assert rec.watch is not None
        relists = rec.watch.relists
        lab.control_plane.store.compact()
        await lab.control_plane.server.close_watches()  # drop every watch; resuming now gets 410
        await wait_until(lambda: rec.watch is not None and rec.watch.relists > relists, what="re-list")
        await configure_proxy(lab, trustme.CA())
        await wait_until(lambda: converged(lab, rec, members), what="changes after the re-list")


async def test_a_node_missing_from_a_stale_cache_is_still_cordoned_before_its_reboot(lab: Lab) -> None:
    """At install time instances join while their kubelets register: a pass that began before the
    Node appeared in the reconciler's cache must still find it before rebooting the machine."""
    members = nodes(lab)[:1]
    await configure_proxy(lab, trustme.CA())
    async with reconciler(lab) as rec:
        assert rec.watch is not None
        rec.watch.node_by_address = lambda address: None  # type: ignore[method-assign]  # a cache behind
        await add_instances(lab, members)
        await wait_until(lambda: bool(members[0].outages) and members[0].outages[-1].up_at is not None, what="the reboot")
        outage = members[0].outages[-1]
        assert outage.at_down is True  # cordoned when the machine went down


async def test_a_change_that_lands_during_the_drain_rides_the_same_reboot(lab: Lab) -> None:
    """The drain can be long (a budget lets one pod go at a time): a change written while it runs
    must be applied before the reboot, not cost the node a second one (seen at 100 nodes)."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    ca = trustme.CA()
    later = "http://proxy2.corp.internal:3129"
    await configure_proxy(lab, ca)
    changed: list[str] = []

    async with reconciler(lab) as rec:
        drain = rec.drain

        async def drain_while_the_proxy_changes(node_name: str) -> int:
            if not changed:
                changed.append(node_name)
                await configure_proxy(lab, ca, proxy=later)
                assert rec.watch is not None
                watch = rec.watch
                await wait_until(lambda: ((watch.proxy or {}).get("status") or {}).get("httpsProxy") == later,
                                 what="the reconciler's cache to see the change")
            return await drain(node_name)

        rec.drain = drain_while_the_proxy_changes  # type: ignore[method-assign]
        await wait_until(lambda: converged(lab, rec, members), what="the later settings")
        assert changed and machine_env(node)["HTTPS_PROXY"] == later
        assert boots(node) == 2  # one reboot, carrying the later settings
        assert rec.records[node.address].reboots == 1


async def test_a_reboot_owed_is_recorded_before_the_node_changes_or_the_node_is_not_changed(lab: Lab) -> None:
    """The record of an owed reboot (``REBOOT_PENDING``) is written before the registry; when that
    write fails (the API server restarting, a timeout at load) the node must not be changed — else a
    pass that then fails before the reboot leaves the registry new, no record, and the next pass
    claims the node done without ever restarting its services (seen at 100 nodes, in faults' API
    server restart and as instances join)."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    await configure_proxy(lab, trustme.CA())
    rec = reconciler(lab)
    annotate, cordon_for_reboot = rec.writer.annotate, rec.writer.cordon_for_reboot
    refused = {"annotate": 0, "cordon": 0}

    async def flaky_annotate(name: str, annotations: dict[str, str | None],
                             labels: dict[str, str | None] | None = None) -> None:
        if annotations.get(REBOOT_PENDING) and not refused["annotate"]:
            refused["annotate"] += 1
            raise client.ApiException(status=503, reason="Service Unavailable")
        await annotate(name, annotations, labels)

    async def flaky_cordon(name: str) -> str:
        if not refused["cordon"]:
            refused["cordon"] += 1
            raise client.ApiException(status=503, reason="Service Unavailable")
        return await cordon_for_reboot(name)

    rec.writer.annotate = flaky_annotate  # type: ignore[method-assign]
    rec.writer.cordon_for_reboot = flaky_cordon  # type: ignore[method-assign]
    async with rec:
        await wait_until(lambda: converged(lab, rec, members), what="the node configured")
        assert refused["annotate"] == 1
        assert boots(node) == 2  # the settings took effect by a reboot: never claimed without one


async def test_a_failed_drain_seen_through_a_lagging_cache_still_ends_in_a_reboot(lab: Lab) -> None:
    """A drain that times out leaves the registry new and the node cordoned; the next pass must
    still reboot it. Its owed reboot is on the Node (``REBOOT_PENDING``), but at 100 nodes on a
    busy machine the reconciler's Node cache lagged minutes behind: a pass that trusted it saw no
    owed reboot, found the registry as desired and claimed the node done — services never
    restarted, the node left cordoned, its budget slot given to another."""
    members = nodes(lab)[:1]
    node = members[0]
    await add_instances(lab, members)
    await configure_proxy(lab, trustme.CA())
    rec = reconciler(lab)
    failed: list[str] = []
    drain = rec.drain

    async def drain_that_times_out_once(node_name: str) -> int:
        if not failed:
            failed.append(node_name)
            raise DrainTimeout(f"drain of {node_name} timed out after 0s: lab-workloads/held still on the node")
        return await drain(node_name)

    rec.drain = drain_that_times_out_once  # type: ignore[method-assign]
    async with rec:
        assert rec.watch is not None
        watch = rec.watch
        frozen: dict[str, dict[str, Any] | None] = {}
        lookup = watch.node_by_address

        def lagging(address: str) -> dict[str, Any] | None:
            # The cache as it was at the first look: it never shows what this reconciler wrote.
            return copy.deepcopy(frozen.setdefault(address, lookup(address)))

        watch.node_by_address = lagging  # type: ignore[method-assign]
        await wait_until(lambda: converged(lab, rec, members), what="the node configured")
        assert failed
        assert boots(node) == 2  # rebooted after the failed drain: never claimed without one
        assert rec.records[node.address].reboot_pending is None
        listed = {n["metadata"]["name"]: n for n in await admin.nodes(lab.api())}
        assert not (listed[failed[0]].get("spec") or {}).get("unschedulable")  # its cordon released


def test_windows_instances_are_parsed_once_per_version_of_the_configmap() -> None:
    """Every node's reconcile asks for the instances: the same ConfigMap version answers from the
    parse already made, a new version is parsed again."""
    rec = Reconciler(client.ApiClient())
    rec.watch = ClusterWatch(rec.api, OPERATOR_NAMESPACE, lambda kind, event, obj: None)

    def configmap(version: str, data: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": INSTANCES, "namespace": OPERATOR_NAMESPACE, "resourceVersion": version},
                "data": data}

    rec.watch.configmaps.apply("ADDED", configmap("1", {"10.0.0.1": "username=Administrator"}))
    first = rec.instances()
    assert first == {"10.0.0.1": "Administrator"} and rec.instances() is first
    rec.watch.configmaps.apply("MODIFIED", configmap("2", {"10.0.0.1": "username=Administrator",
                                                           "10.0.0.2": "username=svc"}))
    assert rec.instances() == {"10.0.0.1": "Administrator", "10.0.0.2": "svc"}


def test_a_records_owed_reboot_is_indexed_as_it_is_set() -> None:
    owing: set[str] = set()
    record = NodeRecord(address="10.0.0.5", owing=owing)
    assert owing == set()
    record.reboot_pending = "boot-1"
    assert owing == {"10.0.0.5"}
    record.reboot_pending = None
    assert owing == set()
    NodeRecord(address="10.0.0.6", owing=owing, reboot_pending="boot-2")
    assert owing == {"10.0.0.6"}


async def test_verification_waits_on_the_node_for_services_that_come_slowly(lab: Lab) -> None:
    members = nodes(lab)[:1]
    node = members[0]
    node.config.service_stage_seconds = 1.0  # four stages: the last service ~4 s after the first look
    await add_instances(lab, members)
    await configure_proxy(lab, trustme.CA())
    async with reconciler(lab, service_poll=0.1, service_start_timeout=120.0) as rec:
        await wait_until(lambda: converged(lab, rec, members), what="the proxy on the slow node")
        record = rec.records[node.address]
        assert boots(node) == 2
        # One verification after the reboot: the node waited for its services (a poll every 0.1 s
        # would have repeated it ~40 times), and still judged them by this boot's start times.
        assert (record.round_trips, record.service_polls) == ([4], 0), record
        assert all(service.status == "Running" for service in node.machine.services.values()
                   if service.name in ("containerd", "kubelet", "kube-proxy")), node.machine.services
