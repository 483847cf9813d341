"""The reconciler: keeps every Windows instance's proxy variables and trusted certificates equal to
the cluster's, level-triggered and idempotent.

Per node, one pass: compute the desired state from the cluster (``desired``), observe the node
in one SSH round trip, apply the difference in one more, and if anything changed: cordon,
``Restart-Computer -Force``, wait for SSH to go down and come back with a new boot, verify the
variables at process scope and that the egress services restarted, uncordon. At most
``max_unavailable`` nodes are in that window at once. Progress is recorded in Node annotations,
so a restarted reconciler resumes without a second reboot.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
from kubernetes import client

from proxyfleet.core.cancelling import stop_task
from proxyfleet.core.contract import (
    APPLIED,
    EGRESS_SERVICES,
    INSTANCES,
    KEY_FIELD,
    KEY_SECRET,
    LINUX_INSTANCES,
    MESSAGE,
    OPERATOR_NAMESPACE,
    OPERATOR_REBOOT_TIMEOUT,
    PROXY_VARIABLES,
    RECONCILER_RESYNC_PERIOD,
    STATE_LABEL,
    TRUSTED_CA,
)
from proxyfleet.core.informer import internal_ip
from proxyfleet.core.linuxssh import LinuxNodeConnection
from proxyfleet.core.nodessh import (
    NodeAddress,
    NodeConnection,
    NodeError,
    ScriptFailed,
    Unreachable,
    silence_command_logging,
)
from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.reconciler import linuxscripts
from proxyfleet.harness.reconciler.applying import ConnectionPool, wait_for_new_boot
from proxyfleet.harness.reconciler.budget import DisruptionBudget
from proxyfleet.harness.reconciler.desired import (
    ChangePlan,
    DesiredState,
    InvalidClusterInput,
    ObservedState,
    desired_state,
    plan_changes,
)
from proxyfleet.harness.reconciler.draining import DrainSettings, NodeDrainer
from proxyfleet.harness.reconciler.hostkeys import HostKeyPins, HostKeyPolicyError, KnownHosts
from proxyfleet.harness.reconciler.linuxfiles import FLAVOURS, PROXY_ENV, FileSpec, Flavour, node_files
from proxyfleet.harness.reconciler.linuxscripts import LinuxObservation, ObservationError
from proxyfleet.harness.reconciler.queueing import WorkQueue
from proxyfleet.harness.reconciler.reporting import (
    APPLIED_PROXY,
    CONFIG_HASH,
    REBOOT_PENDING,
    USERNAME,
    ClusterWriter,
)
from proxyfleet.harness.reconciler.scripts import (
    BUNDLE_PATH,
    apply_data,
    apply_script,
    observe_script,
    verify_script,
)
from proxyfleet.harness.reconciler.watching import OWES_REBOOT, ClusterWatch

log = logging.getLogger(__name__)
# How long stopping waits for the watch threads (their sockets are shut down, so they end at once).
WATCH_JOIN_SECONDS = 5.0


@dataclass
class ReconcilerSettings:
    namespace: str = OPERATOR_NAMESPACE
    ssh_port: int = 22
    max_unavailable: int = 1
    # Strict host keys: only hosts in this OpenSSH known_hosts file (None: pin on first contact).
    known_hosts: Path | None = None
    workers: int = 64
    resync_period: float = RECONCILER_RESYNC_PERIOD
    reboot_timeout: float = OPERATOR_REBOOT_TIMEOUT  # the real operator's
    # sshd answers before containerd, the kubelet and delayed-start services run: after a new
    # boot, wait this long for every egress service, polling this often.
    service_start_timeout: float = 600.0
    service_poll: float = 2.0
    # Before a reboot the node's pods are evicted (PodDisruptionBudgets honoured); a refused
    # eviction is retried this often until the drain times out.
    drain_timeout: float = 600.0
    drain_retry: float = 5.0
    connect_timeout: float = 10.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    # Related cluster changes arrive on separate watches (Proxy status, then the re-injected
    # bundle); waiting this long after the first one lets them land together, so one change
    # means one reboot.
    settle_delay: float = 1.0


@dataclass
class NodeRecord:
    """What the reconciler knows about one instance (also visible in annotations and Events)."""

    state: str = "pending"
    message: str = ""
    failures: int = 0
    reboots: int = 0
    changes: int = 0
    cordoned_by: str | None = None  # during a reboot: "administrator" or "reconciler"
    # The boot a reboot was owed from (REBOOT_PENDING as this reconciler wrote it), until the
    # node is verified: the Node's annotation seen through a cache that lags under load (minutes,
    # at 100 nodes on a busy machine) must not make a node whose reboot failed look done.
    reboot_pending: str | None = None
    round_trips: list[int] = field(default_factory=list)  # SSH round trips per applied change
    polls: int = 0  # connection attempts while waiting for the last new boot
    # Verifications repeated because a service was not up yet: 0 when the node's own wait for
    # them (WaitForStatus, within the service timeout) sufficed.
    service_polls: int = 0
    address: str = ""
    # The reconciler's index of the instances owing a reboot by their record, kept as
    # ``reboot_pending`` is set: every waiting reboot counts them, and at 1,000 nodes scanning
    # every record for each count was a tenth of the lab's CPU.
    owing: set[str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.reboot_pending = self.reboot_pending  # indexed once ``owing`` is set

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "reboot_pending" and (owing := self.__dict__.get("owing")) is not None:
            if value:
                owing.add(self.address)
            else:
                owing.discard(self.address)


class VerificationFailed(NodeError):
    reason = "VerificationFailed"


def _observed(data: dict[str, Any]) -> ObservedState:
    return ObservedState(
        hostname=str(data.get("hostname") or ""),
        environment={k: v for k, v in (data.get("environment") or {}).items()},
        root_thumbprints=frozenset(str(t).upper() for t in data.get("root") or []),
        record=str(data.get("imported") or ""),
        bundle_sha256=data.get("bundle"),
        boot_time=str(data.get("boot") or ""),
        service_start_times=dict(data.get("services") or {}))


class Reconciler:
    """The reference reconciler. Broken variants (``variants.py``) subclass it and override the
    one hook they break (``desired``, ``plan``, ``apply_script``, ``wait_for_boot``,
    ``reboot_again``, ``environment_mismatches``, ``stale_services``, ``drain``,
    ``_reboot_and_verify``);
    nothing here knows about them."""

    name = "correct"
    description = "the reference reconciler"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        self.api = api
        self.settings = settings or ReconcilerSettings()
        self.writer = ClusterWriter(api, self.settings.namespace)
        # windows-instances and linux-instances, parsed, by ConfigMap and version
        self._instances: dict[str, tuple[str, dict[str, str]]] = {}
        self.drainer = NodeDrainer(api, DrainSettings(self.settings.drain_timeout, self.settings.drain_retry))
        self.records: dict[str, NodeRecord] = {}
        self._owing: set[str] = set()  # instances whose record owes a reboot (``NodeRecord.owing``)
        # A worker is held through a node's whole reboot: leave room for the others beyond maxUnavailable.
        self.queue = WorkQueue(self._reconcile, max(self.settings.workers, 2 * self.settings.max_unavailable))
        self.budget = DisruptionBudget(self.settings.max_unavailable, self._recorded_reboots)
        self.watch: ClusterWatch | None = None
        self._resync: asyncio.Task[None] | None = None
        self._reported: set[str] = set()
        self.rebooting: set[str] = set()
        self.max_concurrent_reboots = 0
        self.connections = ConnectionPool()
        self.host_keys = HostKeyPins(api, self.settings.namespace,
                                     KnownHosts(self.settings.known_hosts) if self.settings.known_hosts else None)
        self._refused: dict[str, str | None] = {}  # address -> the pin it was refused under
        self._key_cache: tuple[str | None, asyncssh.SSHKey | None] = (None, None)

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        silence_command_logging()
        loop = asyncio.get_running_loop()
        self.watch = ClusterWatch(self.api, self.settings.namespace, self._on_change)
        self.watch.start()
        self.queue.start()
        self._resync = loop.create_task(self._resync_loop(), name="reconciler resync")

    async def stop(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        await stop_task(self._resync)
        await self.queue.stop()
        await self.host_keys.close()
        await self.connections.close_all()
        if self.watch is not None and not await asyncio.to_thread(self.watch.join, WATCH_JOIN_SECONDS):
            log.warning("a watch thread did not end within %.0f s of stopping", WATCH_JOIN_SECONDS)

    async def __aenter__(self) -> Reconciler:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _resync_loop(self) -> None:
        assert self.watch is not None
        await self.watch.synced.wait()
        while True:
            self.enqueue_all()
            await asyncio.sleep(self.settings.resync_period)  # the periodic resync

    # --- what to reconcile --------------------------------------------------------------------

    def instances(self) -> Mapping[str, str]:
        """windows-instances: address -> username (entries that do not parse are reported). Parsed
        once per version of the ConfigMap: every node's reconcile asks, and at 1,000 instances
        parsing it each time made the fleet's reconciles quadratic."""
        return self._parsed_instances(INSTANCES)

    def linux_instances(self) -> Mapping[str, str]:
        """linux-instances: the Linux nodes this reconciler drives, address -> username."""
        return self._parsed_instances(LINUX_INSTANCES)

    def _parsed_instances(self, name: str) -> Mapping[str, str]:
        assert self.watch is not None
        configmap = self.watch.configmaps.get(name) or {}
        version = (configmap.get("metadata") or {}).get("resourceVersion")
        cached = self._instances.get(name)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        found: dict[str, str] = {}
        for address, value in (configmap.get("data") or {}).items():
            key, sep, username = str(value).partition("=")
            if key.strip() != "username" or not sep or not username.strip():
                self._report_once(None, "InvalidInstance",
                                  f"{name} entry {address!r} must be 'username=<user>', "
                                  f"got {value!r}", "Warning")
                continue
            found[address] = username.strip()
        if version is not None:
            self._instances[name] = (version, found)
        return found

    def managed_addresses(self) -> set[str]:
        """Instances plus nodes this reconciler configured earlier (to deconfigure if removed)."""
        assert self.watch is not None
        addresses = set(self.instances()) | set(self.linux_instances())
        for node in self.watch.nodes.cache.values():
            if CONFIG_HASH in (node["metadata"].get("annotations") or {}):
                address = internal_ip(node)
                if address:
                    addresses.add(address)
        return addresses

    def _recorded_reboots(self) -> set[str]:
        """Instances whose Node records a reboot asked for and not yet verified (``REBOOT_PENDING``),
        and those this reconciler owes a reboot to by its own record (whatever the cache shows yet)."""
        if self.watch is None:
            return set(self._owing)
        return self._owing.union(self.watch.nodes.values(OWES_REBOOT))

    def enqueue_all(self, delay: float = 0.0) -> None:
        for address in sorted(self.managed_addresses()):
            if delay:
                self.queue.add_after(address, delay)
            else:
                self.queue.add(address)

    def _on_change(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        if kind == "nodes":
            if event in ("ADDED", "SYNCED"):
                self.enqueue_all()  # a node joined: it may be an instance waiting for its Node
            return
        if kind in ("proxies", "configmaps"):
            asyncio.get_running_loop().create_task(self._ensure_trusted_ca(), name="ensure trusted-ca")
        self.enqueue_all(0.0 if event == "SYNCED" else self.settings.settle_delay)

    async def _ensure_trusted_ca(self) -> None:
        """While a proxy is configured, ``trusted-ca`` exists and carries the injection label."""
        assert self.watch is not None
        status = (self.watch.proxy or {}).get("status") or {}
        if not (status.get("httpProxy") or status.get("httpsProxy")) or not self.watch.synced.is_set():
            return
        with contextlib.suppress(Exception):
            if await self.writer.ensure_trusted_ca(self.watch.configmaps.get(TRUSTED_CA)):
                await self.writer.event(None, "TrustedCARequested",
                                        f"created or relabelled ConfigMap {TRUSTED_CA} for the cluster's "
                                        "trusted CA bundle")

    def _client_key(self) -> asyncssh.SSHKey | None:
        assert self.watch is not None
        secret = self.watch.secrets.get(KEY_SECRET) or {}
        data = (secret.get("data") or {}).get(KEY_FIELD)
        if not data:
            return None
        if self._key_cache[0] != data:  # parse once per Secret change, not once per reconcile
            try:
                key: asyncssh.SSHKey | None = asyncssh.import_private_key(base64.b64decode(data))
            except (ValueError, asyncssh.KeyImportError):
                key = None
            self._key_cache = (data, key)
        return self._key_cache[1]

    def _report_once(self, node: dict[str, Any] | None, reason: str, message: str, kind: str) -> None:
        key = f"{(node or {}).get('metadata', {}).get('name', '')}|{reason}|{message}"
        if key in self._reported:
            return
        self._reported.add(key)
        asyncio.get_running_loop().create_task(self.writer.event(node, reason, message, kind),
                                               name=f"event {reason}")

    # --- one node -----------------------------------------------------------------------------

    def _backoff(self, record: NodeRecord) -> float:
        record.failures += 1
        return float(min(self.settings.backoff_base * 2 ** (record.failures - 1), self.settings.backoff_max))

    async def _set_state(self, node: dict[str, Any] | None, record: NodeRecord, state: str, message: str,
                         annotations: dict[str, str | None] | None = None, strict: bool = False) -> None:
        """Record ``state`` here and on the Node: best-effort (a report), or ``strict`` (a record the
        next pass decides by: raises when the API server does not take it)."""
        record.state, record.message = state, redact_text(message)
        if node is None:
            return
        values: dict[str, str | None] = {MESSAGE: record.message, **(annotations or {})}
        try:
            await self.writer.annotate(node["metadata"]["name"], values, {STATE_LABEL: state})
        except Exception as exc:
            if strict:
                raise
            log.warning("recording %r on Node %s failed: %s", state, node["metadata"]["name"],
                        redact_text(str(exc))[:300])

    async def _reconcile(self, address: str) -> float | None:
        assert self.watch is not None
        # Decide nothing on a partial cache: without the Proxy, every node would look proxy-less.
        await self.watch.synced.wait()
        record = self.records.get(address)
        if record is None:
            record = self.records[address] = NodeRecord(address=address, owing=self._owing)
        node = self.watch.node_by_address(address)
        labels = (node or {}).get("metadata", {}).get("labels") or {}
        linux = address in self.linux_instances() or (
            address not in self.instances() and labels.get("kubernetes.io/os") == "linux")
        instances = self.linux_instances() if linux else self.instances()
        annotations = dict((node or {}).get("metadata", {}).get("annotations") or {})
        deconfigure = address not in instances
        if deconfigure and CONFIG_HASH not in annotations:
            await self.connections.discard(address)
            await self.budget.reachable(address, True)  # no longer an instance: not counted
            return None
        username = instances.get(address) or annotations.get(USERNAME) or ("core" if linux else "Administrator")
        key = self._client_key()
        if key is None:
            self._report_once(node, "MissingSSHKey", f"Secret {KEY_SECRET} has no usable '{KEY_FIELD}'",
                              "Warning")
            await self._set_state(node, record, "failed", f"no SSH key in Secret {KEY_SECRET}")
            return None
        try:
            desired = self.desired(None if deconfigure else self.watch.proxy,
                                   self.watch.configmaps.get(TRUSTED_CA))
        except InvalidClusterInput as exc:
            self._report_once(node, exc.reason, f"not applying the cluster's proxy settings: {exc}", "Warning")
            await self._set_state(node, record, "failed", str(exc))
            return None
        proxied = any(desired.environment.values())
        if proxied:
            await self._ensure_trusted_ca()
        if proxied and not desired.bundle_pem:
            await self._set_state(node, record, "waiting", "waiting for the trusted CA bundle to be injected")
            return self.settings.backoff_base
        try:
            expectation = self.host_keys.expectation(address, self.settings.ssh_port, self.watch.configmaps.cache)
        except HostKeyPolicyError as exc:
            self._report_once(node, exc.reason, str(exc), "Warning")
            await self._set_state(node, record, "failed", str(exc))
            return None  # until the known hosts (or the instance list) change
        if address in self._refused and self._refused[address] == expectation.key:
            return None  # a host that showed the wrong key gets no traffic until its pin changes
        self._refused.pop(address, None)
        connection: NodeConnection | None = None
        try:
            connection = await self.connections.acquire(NodeAddress(address, self.settings.ssh_port, username),
                                                        key, expectation.key, self.settings.connect_timeout,
                                                        LinuxNodeConnection if linux else NodeConnection)
            await self.budget.reachable(address, True)
            if expectation.first_contact:
                # Recorded where only this namespace's admins can write, before anything is sent.
                assert connection.host_key is not None
                await self.host_keys.pin(address, connection.host_key)
            if isinstance(connection, LinuxNodeConnection):
                connection = await self._converge_linux(connection, node, annotations, desired, record, deconfigure)
            else:
                connection = await self._converge(connection, node, annotations, desired, record, deconfigure)
        except (NodeError, HostKeyPolicyError) as exc:
            if connection is not None:
                await connection.close()
            await self.connections.discard(address)
            if exc.reason == "HostKeyMismatch":
                self._refused[address] = expectation.key
                self._report_once(node, exc.reason, str(exc), "Warning")
                await self._set_state(node, record, "failed", str(exc))
                return None
            log.warning("%s: %s: %s", address, exc.reason, redact_text(str(exc)))
            if isinstance(exc, HostKeyPolicyError):
                self._report_once(node, exc.reason, str(exc), "Warning")
            else:
                await self.writer.event(node, exc.reason, str(exc), "Warning")
            if exc.reason == "RebootTimeout" and not deconfigure:
                # Down since our reboot: it counts against maxUnavailable until it answers. (A node
                # merely unreachable over SSH is not down by our hand: the others proceed.)
                await self.budget.reachable(address, False)
            await self._set_state(node, record, "unreachable" if exc.reason == "NodeUnreachable" else "failed",
                                  str(exc))
            return self._backoff(record)
        except BaseException:
            if connection is not None:
                await connection.close()
            raise
        if deconfigure:
            await connection.close()
        else:
            self.connections.release(connection)
        record.failures = 0
        return None

    # --- the hooks a broken variant overrides -------------------------------------------------

    def desired(self, proxy: dict[str, Any] | None, trusted_ca: dict[str, Any] | None) -> DesiredState:
        """The node target for the cluster's Proxy and trusted CA bundle."""
        return desired_state(proxy, trusted_ca)

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        """What to change on one node."""
        return plan_changes(desired, observed)

    def apply_script(self, plan: ChangePlan) -> str:
        """The script that applies ``plan`` (constant: the values travel in its data file)."""
        return apply_script()

    def linux_files(self, desired: DesiredState, flavour: Flavour) -> dict[str, FileSpec]:
        """Every file this reconciler owns on a Linux node of ``flavour``, as ``desired`` wants it."""
        return node_files(desired.environment, desired.bundle_pem, flavour)

    def linux_apply(self, changes: dict[str, FileSpec], flavour: Flavour) -> linuxscripts.ApplyCommand:
        """The command that writes ``changes`` (and extracts the bundle, reloads systemd, as needed)."""
        return linuxscripts.apply_script(changes, flavour)

    def linux_reboots(self, changes: dict[str, FileSpec], observed: LinuxObservation) -> bool:
        """Whether ``changes`` take a drain and reboot (the MCO's: any unit or ``proxy.env`` change)."""
        return linuxscripts.needs_reboot(changes, observed, PROXY_ENV)

    def linux_restarts(self, changes: dict[str, FileSpec], observed: LinuxObservation,
                       flavour: Flavour) -> tuple[str, ...]:
        """The services a rebootless change restarts (the MCO's: the runtime, for a new CA)."""
        return (flavour.runtime,) if flavour.anchor in changes else ()

    def linux_mismatches(self, wanted: dict[str, str | None], held: dict[str, str]) -> list[str]:
        """The proxy variables a Linux service holds other than ``wanted`` (both spellings)."""
        return linuxscripts.environment_mismatches(wanted, held)

    async def wait_for_boot(self, connection: NodeConnection, old_boot: str) -> tuple[NodeConnection, str, int]:
        """After the restart request: SSH gone and back with a boot time other than ``old_boot``.
        Returns the new connection, the new boot time and how many connection attempts it took."""
        pinned = connection.pinned_host_key or connection.host_key
        fresh, new_boot, polls = await wait_for_new_boot(connection.target, connection.client_key, pinned,
                                                         old_boot, self.settings.reboot_timeout,
                                                         kind=type(connection))
        fresh.round_trips = 0  # its boot-time query is counted in polls
        return fresh, new_boot, polls

    async def drain(self, node_name: str) -> int:
        """Evict the cordoned node's pods (not DaemonSet pods) through the Eviction API, honouring
        PodDisruptionBudgets; returns how many were evicted."""
        return await self.drainer.drain(node_name)

    def rebooted_since(self, pending: str, boot: str) -> bool:
        """Whether the reboot recorded as pending (at boot ``pending``) has happened: the node
        runs a boot other than the one the reboot was asked for in."""
        return boot != pending

    def reboot_again(self, attempts: int, *, confirmed: bool, failure: VerificationFailed | None) -> bool:
        """Whether to restart once more. Never: a restart whose exit status was lost still rebooted
        (the new boot proves it), and services not up yet are waited for, not rebooted for."""
        return False

    def environment_mismatches(self, desired: dict[str, str | None],
                               process_env: dict[str, Any]) -> dict[str, str | None]:
        """The variables a fresh session sees differently than the cluster wants."""
        return {k: v for k, v in desired.items() if (process_env.get(k) or None) != v}

    def stale_services(self, services: dict[str, Any], boot: str) -> list[str]:
        """Egress services not (re)started since ``boot``."""
        return [s for s in EGRESS_SERVICES if not services.get(s) or str(services[s]) < boot]

    # --- converging one node ------------------------------------------------------------------

    async def _converge(self, connection: NodeConnection, node: dict[str, Any] | None,
                        annotations: dict[str, str], desired: DesiredState, record: NodeRecord,
                        deconfigure: bool) -> NodeConnection:
        """Bring one node to ``desired``; returns the connection still in use (a new one after a reboot)."""
        try:
            observed = _observed(await connection.script(observe_script()))
        except Unreachable:
            if not connection.reused:
                raise
            await connection.close()  # the kept connection went stale (say, an out-of-band reboot)
            await connection.connect()
            observed = _observed(await connection.script(observe_script()))
        # Our own record first: the annotation comes through the cache, which may not show it yet.
        pending = record.reboot_pending or annotations.get(REBOOT_PENDING)
        log.debug("%s: boot %s, reboot pending since %s (Node %s at resourceVersion %s)", connection.target.address,
                  observed.boot_time, pending, (node or {}).get("metadata", {}).get("name"),
                  (node or {}).get("metadata", {}).get("resourceVersion"))
        if pending and self.rebooted_since(pending, observed.boot_time):
            # Resuming after a reconciler restart: the reboot asked for happened; verify it, never
            # reboot again.
            await self._verify_and_finish(node, connection, desired, record, observed.boot_time, deconfigure)
            return connection
        plan = self.plan(desired, observed)
        if plan.upload_bundle:  # a copy for people and tools on the node; the imports come with the data
            await connection.put_files({BUNDLE_PATH: desired.bundle_pem.encode()})
        if not plan.changes_node and not pending:
            await self._settle_unchanged(node, annotations, desired, record, deconfigure)
            return connection
        if plan.changes_environment or pending:
            # One budget slot from before the node changes until it is verified after its reboot.
            async with self.budget.reboot(connection.target.address):
                # The wait for a slot can be long: apply what the cluster wants now, not what it
                # wanted when this pass began (a second change must not cost a second reboot).
                desired = self._latest_desired(desired, deconfigure)
                plan = self.plan(desired, observed)
                if plan.changes_environment or pending:
                    log.debug("%s: reboot owed (pending %s, Node %s)", connection.target.address, pending,
                              None if node is None else node["metadata"]["name"])
                    if not pending and node is not None:
                        # Recorded before the node changes: a reconciler killed right after the
                        # apply still knows a reboot is owed (the registry is new, the services not).
                        # Not best-effort: unrecorded, a pass that fails before the reboot would
                        # leave the next one a node that looks done (its registry already new).
                        await self._set_state(node, record, "applying", plan.summary(),
                                              {REBOOT_PENDING: observed.boot_time,
                                               USERNAME: connection.target.username}, strict=True)
                    record.reboot_pending = pending or observed.boot_time
                    await self._apply(connection, node, plan, record, live=False)
                    return await self._reboot_and_verify(connection, node, observed.boot_time, desired, record,
                                                         deconfigure)
        await self._apply(connection, node, plan, record, live=True)
        # Certificates only (or nothing): Windows reads the Root store live, no service needs a restart.
        await self._verify_and_finish(node, connection, desired, record, observed.boot_time, deconfigure,
                                      uncordon=False)
        return connection

    # --- converging one Linux node ------------------------------------------------------------

    async def _converge_linux(self, connection: LinuxNodeConnection, node: dict[str, Any] | None,
                              annotations: dict[str, str], desired: DesiredState, record: NodeRecord,
                              deconfigure: bool) -> LinuxNodeConnection:
        """Bring one Linux node to ``desired`` the Machine Config Operator's way (``linuxfiles``):
        a change to the proxy files drains and reboots it within the budget; a CA-only change is
        extracted and CRI-O (containerd) restarted, with no reboot. Returns the connection in use."""
        observed = await self._observe_linux(connection)
        flavour = FLAVOURS.get(observed.os_id)
        if flavour is None:
            raise ScriptFailed(f"{connection.target.address} runs {observed.os_id!r}, a Linux this reconciler "
                               f"does not configure (it knows: {', '.join(sorted(FLAVOURS))})")
        pending = record.reboot_pending or annotations.get(REBOOT_PENDING)
        if pending and self.rebooted_since(pending, observed.boot_id):
            await self._verify_linux_and_finish(node, connection, flavour.services, desired, record, deconfigure)
            return connection
        changes = linuxscripts.changed_files(self.linux_files(desired, flavour), observed)
        if not changes and not pending:
            await self._settle_unchanged(node, annotations, desired, record, deconfigure)
            return connection
        if not pending and not self.linux_reboots(changes, observed):
            # the MCO's rebootless changes: a CA is extracted and the runtime (not the kubelet)
            # restarted; an environment file no unit reads is just written
            await self._apply_linux(connection, node, changes, flavour, record, live=True)
            restarts = self.linux_restarts(changes, observed, flavour)
            if restarts:
                await connection.shell(f"sudo -n systemctl restart {' '.join(restarts)}")
            await self._verify_linux_and_finish(node, connection, flavour.services, desired, record, deconfigure,
                                                uncordon=False)
            return connection
        address = connection.target.address
        async with self.budget.reboot(address):
            desired = self._latest_desired(desired, deconfigure)
            changes = linuxscripts.changed_files(self.linux_files(desired, flavour), observed)
            if not pending and node is not None:
                await self._set_state(node, record, "applying", f"{len(changes)} file(s) on the node",
                                      {REBOOT_PENDING: observed.boot_id, USERNAME: connection.target.username},
                                      strict=True)
            record.reboot_pending = pending or observed.boot_id
            await self._apply_linux(connection, node, changes, flavour, record, live=False)
            if node is None:
                node = await self.writer.find_node(address)
            name = node["metadata"]["name"] if node is not None else address
            self.rebooting.add(name)
            self.max_concurrent_reboots = max(self.max_concurrent_reboots, len(self.rebooting))
            try:
                if node is not None:
                    await self._cordon_and_drain(node, record)
                await connection.request_reboot()
                record.reboots += 1
                fresh, _, polls = await self.wait_for_boot(connection, record.reboot_pending)
                assert isinstance(fresh, LinuxNodeConnection)
                connection = fresh
                record.polls = polls
                await self._verify_linux_and_finish(node, connection, flavour.services, desired, record,
                                                    deconfigure)
            finally:
                self.rebooting.discard(name)
        return connection

    async def _observe_linux(self, connection: LinuxNodeConnection) -> LinuxObservation:
        every = sorted({path for flavour in FLAVOURS.values()
                        for path in node_files(dict.fromkeys(PROXY_VARIABLES, "x"), "x", flavour)})
        services = tuple(sorted({s for flavour in FLAVOURS.values() for s in flavour.services}))
        try:
            text = await connection.shell(linuxscripts.as_root(linuxscripts.observe_script(every, services)))
        except Unreachable:
            if not connection.reused:
                raise
            await connection.close()  # the kept connection went stale (say, an out-of-band reboot)
            await connection.connect()
            text = await connection.shell(linuxscripts.as_root(linuxscripts.observe_script(every, services)))
        try:
            return linuxscripts.parse_observation(text)
        except ObservationError as exc:
            raise ScriptFailed(f"{connection.target.address}: {exc}") from None

    async def _apply_linux(self, connection: LinuxNodeConnection, node: dict[str, Any] | None,
                           changes: dict[str, FileSpec], flavour: Flavour, record: NodeRecord, live: bool) -> None:
        if not changes:
            return
        summary = "wrote " + ", ".join(sorted(changes))
        record.state, record.message = "applying", summary
        command = self.linux_apply(changes, flavour)
        await connection.shell(linuxscripts.as_root(command.command), input=command.stdin)
        record.changes += 1
        log.info("applied on %s: %s", connection.target.address, summary)
        if node is not None:
            await self.writer.event(node, "ProxyConfigApplied", summary + (" (live, no reboot)" if live else ""))

    async def _verify_linux_and_finish(self, node: dict[str, Any] | None, connection: LinuxNodeConnection,
                                       services: tuple[str, ...], desired: DesiredState, record: NodeRecord,
                                       deconfigure: bool, uncordon: bool = True) -> None:
        """Every service runs with the cluster's proxy in both spellings (its process's own
        environment, ``/proc/PID/environ``), waiting for services still starting."""
        deadline = asyncio.get_running_loop().time() + self.settings.service_start_timeout
        while True:
            try:
                answer = await connection.shell(linuxscripts.as_root(linuxscripts.verify_script(services)))
                held = linuxscripts.parse_verification(answer)
            except ObservationError as exc:
                raise VerificationFailed(f"{connection.target.address}: {exc}") from None
            down = [s for s in services if held.get(s, (0, {}))[0] == 0]
            if not down:
                break
            if asyncio.get_running_loop().time() >= deadline:
                raise VerificationFailed(f"services {down} did not start")
            await asyncio.sleep(self.settings.service_poll)  # polling the node, not synchronising
        for service in services:
            wrong = self.linux_mismatches(desired.environment, held[service][1])
            if wrong:
                raise VerificationFailed(f"{service} runs with {sorted(wrong)} other than the cluster wants")
        if node is not None and uncordon:
            await self.release_cordon(node["metadata"]["name"], record.cordoned_by)
            record.cordoned_by = None
        await self._record_done(node, record, desired, deconfigure, "configured and verified")

    async def _settle_unchanged(self, node: dict[str, Any] | None, annotations: dict[str, str],
                                desired: DesiredState, record: NodeRecord, deconfigure: bool) -> None:
        """Nothing to change on the node: record it unless the Node already says so."""
        state = "deconfigured" if deconfigure else "configured"
        labels = (node or {}).get("metadata", {}).get("labels") or {}
        stale_revision = desired.revision is not None and annotations.get(APPLIED) != desired.revision
        if (node is None or annotations.get(CONFIG_HASH) != desired.config_hash() or stale_revision
                or labels.get(STATE_LABEL) != state or (not deconfigure and APPLIED_PROXY not in annotations)):
            await self._record_done(node, record, desired, deconfigure, "already as desired")
        elif record.state != state:
            record.state, record.message = state, "already as desired"  # the cluster already says so

    async def _cordon_and_drain(self, node: dict[str, Any], record: NodeRecord) -> None:
        """Before a reboot: cordon the Node (remembering who had), evict its pods, say so."""
        name = node["metadata"]["name"]
        record.cordoned_by = await self.writer.cordon_for_reboot(name)
        await self._set_state(node, record, "rebooting", "restarting to apply the proxy settings")
        evicted = await self.drain(name)
        await self.writer.event(node, "RebootingNode", f"cordoned, {evicted} pod(s) evicted; restarting "
                                                       "so services pick up the new environment")

    def _latest_desired(self, desired: DesiredState, deconfigure: bool) -> DesiredState:
        """The node target from the cluster as the cache has it now (``desired`` when the cluster's
        input is unusable at the moment: that is reported by the next pass)."""
        assert self.watch is not None
        try:
            latest = self.desired(None if deconfigure else self.watch.proxy, self.watch.configmaps.get(TRUSTED_CA))
        except InvalidClusterInput:
            return desired
        if any(latest.environment.values()) and not latest.bundle_pem:
            return desired  # the new bundle is not injected yet: never strip certificates meanwhile
        return latest

    async def _apply(self, connection: NodeConnection, node: dict[str, Any] | None, plan: ChangePlan,
                     record: NodeRecord, live: bool) -> None:
        """Apply ``plan`` in one round trip (nothing when it changes nothing: a reboot still owed)."""
        if not plan.changes_node:
            return
        record.state, record.message = "applying", plan.summary()  # before the node changes
        changed = await connection.script(self.apply_script(plan), data=apply_data(plan))
        record.changes += 1
        log.info("applied on %s: %s (%s)", connection.target.address, plan.summary(), changed)
        if node is not None:
            await self.writer.event(node, "ProxyConfigApplied", plan.summary() + (" (live, no reboot)" if live else ""))

    async def _reboot_and_verify(self, connection: NodeConnection, node: dict[str, Any] | None,
                                 old_boot: str, desired: DesiredState, record: NodeRecord,
                                 deconfigure: bool) -> NodeConnection:
        """Cordon, restart, wait for a new boot, verify, uncordon; returns the post-boot connection.
        The caller holds the node's disruption-budget slot."""
        if node is None:
            # The instance had no Node when this pass began; its kubelet may have registered since
            # (at install time they join while being configured). Never reboot a schedulable Node
            # because a cache had not seen it yet: ask the API server.
            node = self.watch.node_by_address(connection.target.address) if self.watch else None
            if node is None:
                node = await self.writer.find_node(connection.target.address)
        name = node["metadata"]["name"] if node is not None else connection.target.address
        self.rebooting.add(name)
        self.max_concurrent_reboots = max(self.max_concurrent_reboots, len(self.rebooting))
        try:
            if node is not None:
                await self._cordon_and_drain(node, record)
            desired = await self._catch_up(connection, node, desired, record, deconfigure)
            attempts = 0
            while True:
                attempts += 1
                confirmed = await connection.request_reboot()
                record.reboots += 1
                before_reboot = connection.round_trips
                connection, new_boot, polls = await self.wait_for_boot(connection, old_boot)
                if self.reboot_again(attempts, confirmed=confirmed, failure=None):
                    old_boot = new_boot
                    continue
                try:
                    await self._verify_and_finish(node, connection, desired, record, new_boot, deconfigure,
                                                  before_reboot, polls)
                except VerificationFailed as exc:
                    if self.reboot_again(attempts, confirmed=confirmed, failure=exc):
                        old_boot = new_boot
                        continue
                    await connection.close()
                    raise
                except BaseException:
                    await connection.close()
                    raise
                return connection
        finally:
            self.rebooting.discard(name)

    async def _catch_up(self, connection: NodeConnection, node: dict[str, Any] | None, desired: DesiredState,
                        record: NodeRecord, deconfigure: bool) -> DesiredState:
        """Right before the reboot: a change that landed since the apply (a drain waits for one pod
        at a time under a budget; at 100 nodes that is many seconds) is applied now, so the one
        reboot carries it — instead of rebooting for settings already stale and again for the new
        ones. Returns what the node now holds."""
        latest = self._latest_desired(desired, deconfigure)
        if latest.config_hash() == desired.config_hash():
            return desired
        observed = _observed(await connection.script(observe_script()))
        await self._apply(connection, node, self.plan(latest, observed), record, live=False)
        return latest

    async def _verify_and_finish(self, node: dict[str, Any] | None, connection: NodeConnection,
                                 desired: DesiredState, record: NodeRecord, boot: str,
                                 deconfigure: bool, before_reboot: int | None = None, polls: int = 0,
                                 uncordon: bool = True) -> None:
        """In a fresh session (a new exec channel: Windows builds its environment from the registry
        for each one): the variables at process scope, and services started after ``boot``.

        ``before_reboot`` (the round trips up to the restart) is recorded with the verification's
        before the state says "configured", so whoever sees that state sees the whole change."""
        deadline = asyncio.get_running_loop().time() + self.settings.service_start_timeout
        first = connection.round_trips
        waited = 0
        while True:
            # The node waits for its services itself (WaitForStatus), within what is left of the
            # timeout; the poll below only covers services running but not yet in this boot's.
            left = max(0.0, deadline - asyncio.get_running_loop().time())
            verified = await connection.script(verify_script(left), limit=left + 60.0)
            process_env = verified.get("environment") or {}
            wrong = self.environment_mismatches(desired.environment, process_env)
            if wrong:
                raise VerificationFailed(f"after the reboot a fresh session sees {sorted(wrong)} differently "
                                         "than the cluster wants")
            services = verified.get("services") or {}
            stale = self.stale_services(services, boot)
            if not stale:
                break
            if asyncio.get_running_loop().time() >= deadline:
                raise VerificationFailed(f"services {stale} did not start after the reboot")
            waited += 1
            await asyncio.sleep(self.settings.service_poll)  # polling the node, not synchronising
        if before_reboot is not None:
            # observe + apply + restart + one verify; the polls only wait for the boot and services
            record.round_trips.append(before_reboot + first + 1)
            record.polls = polls
            record.service_polls = waited
        if node is not None and uncordon:
            await self.release_cordon(node["metadata"]["name"], record.cordoned_by)
            record.cordoned_by = None
        await self._record_done(node, record, desired, deconfigure, "configured and verified after reboot")

    async def release_cordon(self, name: str, by: str | None) -> None:
        """Make the node schedulable again after its reboot, unless the administrator had cordoned it."""
        await self.writer.release_cordon(name, by)

    async def _record_done(self, node: dict[str, Any] | None, record: NodeRecord, desired: DesiredState,
                           deconfigure: bool, message: str) -> None:
        record.reboot_pending = None  # verified (or nothing was owed): no reboot is owed any more
        if deconfigure:
            await self._set_state(node, record, "deconfigured", "proxy settings and certificates removed",
                                  {CONFIG_HASH: None, REBOOT_PENDING: None, USERNAME: None, APPLIED_PROXY: None,
                                   APPLIED: None})
            if node is not None:
                await self.writer.event(node, "Deconfigured", "removed the proxy settings and the "
                                                              "certificates this reconciler imported")
            return
        log.info("%s: %s (revision %s)", (node or {}).get("metadata", {}).get("name", "?"), message, desired.revision)
        done: dict[str, str | None] = {CONFIG_HASH: desired.config_hash(), REBOOT_PENDING: None,
                                       APPLIED_PROXY: desired.environment.get("HTTPS_PROXY") or "none"}
        if desired.revision is not None:  # verified: the node holds this revision now
            done[APPLIED] = desired.revision
        await self._set_state(node, record, "configured", message, done)
        if node is not None and message != "already as desired":
            await self.writer.event(node, "NodeConfigured", message)

