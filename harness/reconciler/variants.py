"""Deliberately broken reconcilers, each reproducing a real failure mode, so the conformance
suites can prove they catch it.

Each is a subclass of the reference ``Reconciler`` that overrides the one hook it breaks; the
reference code path holds no flag for any of them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import urllib.parse
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import TRUSTED_CA
from proxyfleet.core.nodessh import NodeConnection
from proxyfleet.harness.reconciler.budget import DisruptionBudget
from proxyfleet.harness.reconciler.controller import (
    NodeRecord,
    Reconciler,
    ReconcilerSettings,
    VerificationFailed,
)
from proxyfleet.harness.reconciler.desired import ChangePlan, DesiredState, ObservedState, plan_changes
from proxyfleet.harness.reconciler.hostkeys import Expectation, HostKeyPins
from proxyfleet.harness.reconciler.linuxvariants import LINUX_VARIANTS
from proxyfleet.harness.reconciler.reporting import ClusterWriter
from proxyfleet.harness.reconciler.scripts import by_subject_apply_script, unquoted_apply_script

UNLIMITED = 1 << 20  # "as many nodes down at once as there are"
RETRIES = 3  # how many restarts the looping variants attempt before giving up
LEAK_ANNOTATION = "proxyfleet.io/proxy-config"


class SemicolonNoProxy(Reconciler):
    name = "semicolon-noproxy"
    description = "joins NO_PROXY with ';' (WinINet style): no client splits on it"

    def desired(self, proxy: dict[str, Any] | None, trusted_ca: dict[str, Any] | None) -> DesiredState:
        desired = super().desired(proxy, trusted_ca)
        no_proxy = desired.environment.get("NO_PROXY")
        if not no_proxy:
            return desired
        return dataclasses.replace(desired, environment={**desired.environment,
                                                         "NO_PROXY": no_proxy.replace(",", ";")})


class NoReboot(Reconciler):
    name = "no-reboot"
    description = "writes the registry but never reboots: services keep the old environment"

    async def _reboot_and_verify(self, connection: NodeConnection, node: dict[str, Any] | None,
                                 old_boot: str, desired: DesiredState, record: NodeRecord,
                                 deconfigure: bool) -> NodeConnection:
        record.round_trips.append(connection.round_trips)
        await self._record_done(node, record, desired, deconfigure, "applied (no reboot)")
        return connection


class EarlyReachability(Reconciler):
    name = "early-reachability"
    description = "treats the node as back right after issuing the reboot"

    async def wait_for_boot(self, connection: NodeConnection, old_boot: str) -> tuple[NodeConnection, str, int]:
        # The bug: the node still answers before it has gone down, and that counts as "back".
        again = NodeConnection(connection.target, connection.client_key,
                               connection.pinned_host_key or connection.host_key, self.settings.connect_timeout)
        await again.connect()
        return again, old_boot, 0

    def stale_services(self, services: dict[str, Any], boot: str) -> list[str]:
        return []


class NoCertImport(Reconciler):
    name = "no-cert-import"
    description = "never imports the trusted CA bundle"

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        # Planned as if every bundle certificate were already in the Root store.
        return plan_changes(desired, dataclasses.replace(
            observed, root_thumbprints=observed.root_thumbprints | desired.thumbprints))


class NoCertRemoval(Reconciler):
    name = "no-cert-removal"
    description = "never removes certificates it imported (rotation leaves the old CA)"

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        plan = super().plan(desired, observed)
        plan.remove_certificates = []
        plan.record_after = list(plan.record_before)
        return plan


class NoEnvRemoval(Reconciler):
    name = "no-env-removal"
    description = "never deletes proxy variables (removal leaves them behind)"

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        plan = super().plan(desired, observed)
        plan.delete_environment = []
        return plan

    def environment_mismatches(self, desired: dict[str, str | None],
                               process_env: dict[str, Any]) -> dict[str, str | None]:
        return {k: v for k, v in super().environment_mismatches(desired, process_env).items() if v is not None}


class UnquotedValues(Reconciler):
    name = "unquoted-values"
    description = "interpolates cluster values into PowerShell unescaped"

    def apply_script(self, plan: ChangePlan) -> str:
        return unquoted_apply_script(plan)


class RecordsWholeBundle(Reconciler):
    name = "records-whole-bundle"
    description = ("records every bundle certificate as its own import, so built-in roots that are also in "
                   "the bundle are deleted when the proxy goes (as WMCO does)")

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        plan = super().plan(desired, observed)
        claimed = set(plan.record_before) | desired.thumbprints
        plan.record_before = sorted(claimed)
        plan.record_after = sorted(t for t in claimed - set(plan.remove_certificates) if t in desired.thumbprints)
        return plan


class NoServiceWait(Reconciler):
    name = "no-service-wait"
    description = ("verifies once right after SSH returns and reboots again when the services are not up yet "
                   "(sshd starts first)")

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, dataclasses.replace(settings or ReconcilerSettings(), service_start_timeout=0.0))

    def reboot_again(self, attempts: int, *, confirmed: bool, failure: VerificationFailed | None) -> bool:
        return failure is not None and attempts < RETRIES


# Less than the lab's service hold (2 s of the host's clock): the variant looks before the hold would
# start the services unlooked-at.
FIXED_SERVICE_WAIT = 1.0


class FixedServiceWait(NoServiceWait):
    name = "fixed-service-wait"
    description = ("waits a fixed second after SSH returns, then verifies once and reboots again when the "
                   "services are not up yet (a real host's come tens of seconds after sshd)")

    async def wait_for_boot(self, connection: NodeConnection, old_boot: str) -> tuple[NodeConnection, str, int]:
        fresh, boot, polls = await super().wait_for_boot(connection, old_boot)
        await asyncio.sleep(FIXED_SERVICE_WAIT)  # the bug: a fixed pause stands in for waiting on the services
        return fresh, boot, polls


class RebootWithoutExitStatus(Reconciler):
    name = "reboot-without-exit-status"
    description = ("reads a Restart-Computer that returned no exit status as a failure and reboots again "
                   "(OCPBUGS-90077)")

    def reboot_again(self, attempts: int, *, confirmed: bool, failure: VerificationFailed | None) -> bool:
        return failure is None and not confirmed and attempts < RETRIES


class LeaksCredentials(Reconciler):
    name = "leaks-credentials"
    description = ("records the applied proxy URL on the Node as Base64 (UTF-16LE, as -EncodedCommand carries it) "
                   "and names the proxy's Basic token in an Event: text redaction does not see either")

    async def _record_done(self, node: dict[str, Any] | None, record: NodeRecord, desired: DesiredState,
                           deconfigure: bool, message: str) -> None:
        await super()._record_done(node, record, desired, deconfigure, message)
        url = desired.environment.get("HTTPS_PROXY") or ""
        userinfo = urllib.parse.urlsplit(url).netloc.rpartition("@")[0] if "://" in url else ""
        if node is None or not userinfo:
            return
        encoded = base64.b64encode(url.encode("utf-16-le")).decode()
        await self.writer.annotate(node["metadata"]["name"], {LEAK_ANNOTATION: encoded})
        token = base64.b64encode(urllib.parse.unquote(userinfo).encode()).decode()
        await self.writer.event(node, "ProxyAuthConfigured", f"proxy authorization Basic {token}")


class AnnotatesCredentials(Reconciler):
    name = "annotates-credentials"
    description = ("records the applied proxy URL, password included, in an annotation of its own ConfigMap: "
                   "metadata, where a scan of ConfigMap data alone does not look")

    async def _record_done(self, node: dict[str, Any] | None, record: NodeRecord, desired: DesiredState,
                           deconfigure: bool, message: str) -> None:
        await super()._record_done(node, record, desired, deconfigure, message)
        url = desired.environment.get("HTTPS_PROXY") or ""
        if "@" not in url:
            return
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(
            name="proxy-applied", annotations={"proxyfleet.io/applied-proxy": url}))
        core = self.writer.core
        try:
            await asyncio.to_thread(core.create_namespaced_config_map, self.writer.namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            await asyncio.to_thread(core.patch_namespaced_config_map, "proxy-applied", self.writer.namespace, body)


class LeavesFiles(Reconciler):
    name = "leaves-files"
    description = "removes the proxy but leaves its bundle copy and import record on the node"

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        plan = super().plan(desired, observed)
        plan.cleanup = False
        return plan


class HttpFromHttps(Reconciler):
    name = "http-from-https"
    description = "writes HTTP_PROXY from httpsProxy when the cluster sets no httpProxy"

    def desired(self, proxy: dict[str, Any] | None, trusted_ca: dict[str, Any] | None) -> DesiredState:
        desired = super().desired(proxy, trusted_ca)
        https = desired.environment.get("HTTPS_PROXY")
        if not https or desired.environment.get("HTTP_PROXY"):
            return desired
        return dataclasses.replace(desired, environment={**desired.environment, "HTTP_PROXY": https})


class NormalisesNoProxy(Reconciler):
    name = "normalises-noproxy"
    description = "tidies NO_PROXY (spaces trimmed, lower case, sorted, duplicates dropped) instead of copying status"

    def desired(self, proxy: dict[str, Any] | None, trusted_ca: dict[str, Any] | None) -> DesiredState:
        desired = super().desired(proxy, trusted_ca)
        no_proxy = desired.environment.get("NO_PROXY")
        if not no_proxy:
            return desired
        tidy = ",".join(sorted({e.strip().lower() for e in no_proxy.split(",") if e.strip()}))
        return dataclasses.replace(desired, environment={**desired.environment, "NO_PROXY": tidy})


class TrustsImportRecord(Reconciler):
    name = "trusts-import-record"
    description = ("compares the bundle with its own import record, not the Root store (as WMCO does): "
                   "a recorded certificate deleted out of band is never imported again")

    def plan(self, desired: DesiredState, observed: ObservedState) -> ChangePlan:
        plan = super().plan(desired, observed)
        plan.import_certificates = [c for c in plan.import_certificates if c.thumbprint not in observed.imported]
        return plan


class RemovesBySubject(Reconciler):
    name = "removes-by-subject"
    description = ("removes a certificate that left the bundle by its subject: a CA renewed under the same "
                   "name goes with the one it replaces")

    def apply_script(self, plan: ChangePlan) -> str:
        return by_subject_apply_script()


class NoTrustedCARestore(Reconciler):
    name = "no-trusted-ca-restore"
    description = "creates trusted-ca once and never restores it when it is deleted or loses its injection label"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.seen_trusted_ca = False

    async def _ensure_trusted_ca(self) -> None:
        if self.seen_trusted_ca:
            return
        await super()._ensure_trusted_ca()
        self.seen_trusted_ca = self.watch is not None and self.watch.configmaps.get(TRUSTED_CA) is not None


class NeverRetriesUnreachable(Reconciler):
    name = "never-retries-unreachable"
    description = "gives up on a node it could not reach: no retry, and resyncs skip it"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.given_up: set[str] = set()

    async def _reconcile(self, address: str) -> float | None:
        if address in self.given_up:
            return None
        retry = await super()._reconcile(address)
        if self.records.get(address, NodeRecord()).state == "unreachable":
            self.given_up.add(address)
            return None
        return retry


class RebootsAgainAfterRestart(Reconciler):
    name = "reboots-again-after-restart"
    description = ("restarted mid-reboot, reboots a node again instead of checking whether the reboot it "
                   "asked for happened")

    def rebooted_since(self, pending: str, boot: str) -> bool:
        return False


class AppliesStaleSettings(Reconciler):
    name = "applies-stale-settings"
    description = ("applies the settings it read when its pass began, however long it then waited for a "
                   "reboot slot: a change that lands meanwhile costs every waiting node a second reboot")

    def _latest_desired(self, desired: DesiredState, deconfigure: bool) -> DesiredState:
        return desired


class _AnyHostKey(HostKeyPins):
    """Accepts whatever key a host presents and pins nothing (Go's ``ssh.InsecureIgnoreHostKey``)."""

    def expectation(self, address: str, port: int, configmaps: dict[str, dict[str, Any]]) -> Expectation:
        return Expectation(None, first_contact=False)


class IgnoresHostKeys(Reconciler):
    name = "ignores-host-keys"
    description = "accepts any SSH host key (as WMCO does): a host whose key changed is configured like any other"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.host_keys = _AnyHostKey(api, self.settings.namespace)


class _NoWarnings(ClusterWriter):
    async def event(self, involved: dict[str, Any] | None, reason: str, message: str, kind: str = "Normal") -> None:
        if kind != "Warning":
            await super().event(involved, reason, message, kind)


class NoWarningEvents(Reconciler):
    name = "no-warning-events"
    description = "writes no Warning Events: a node it gave up on shows nothing in `kubectl get events`"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.writer = _NoWarnings(api, self.settings.namespace)


class IgnoresMaxUnavailable(Reconciler):
    name = "ignores-max-unavailable"
    description = "cordons and reboots every node that needs it at once, whatever maxUnavailable says"

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.budget = DisruptionBudget(UNLIMITED, self._recorded_reboots)


class UncordonsAdminCordon(Reconciler):
    name = "uncordons-admin-cordon"
    description = ("uncordons every node after its reboot, also one the administrator had cordoned "
                   "(as WMCO does)")

    async def release_cordon(self, name: str, by: str | None) -> None:
        await self.writer.release_cordon(name, "reconciler")


class SkipsDrain(Reconciler):
    name = "skips-drain"
    description = "cordons but reboots without evicting the node's pods: workloads die with the machine"

    async def drain(self, node_name: str) -> int:
        return 0


class RebootsWhileTerminating(Reconciler):
    name = "reboots-while-terminating"
    description = ("drains by evicting and reboots as soon as every eviction was accepted, without waiting "
                   "for the evicted pods to be gone: they die with the machine, still Terminating")

    async def drain(self, node_name: str) -> int:
        asked = 0
        while True:
            pending = [p for p in await self.drainer.pods_on(node_name)
                       if not (p.get("metadata") or {}).get("deletionTimestamp")]
            if not pending:
                return asked
            accepted = [await self.drainer.remove(pod) for pod in pending]
            asked += sum(accepted)
            if not all(accepted):
                await asyncio.sleep(self.drainer.settings.retry)


class _ForgetsStuckNodes(DisruptionBudget):
    """A budget that stops counting a node once it failed to come back from its reboot."""

    def __init__(self, limit: int, recorded: Callable[[], set[str]]) -> None:
        super().__init__(limit, recorded)
        self.given_up: set[str] = set()

    def unavailable(self, besides: str = "") -> int:
        return len((self.rebooting | self.recorded()) - self.given_up - {besides})

    async def reachable(self, address: str, reachable: bool) -> None:
        async with self._changed:
            if reachable:
                self.given_up.discard(address)
            else:
                self.given_up.add(address)
            self._changed.notify_all()


class FreesStuckSlot(Reconciler):
    name = "frees-stuck-slot"
    description = ("stops counting a node that never came back from its reboot against maxUnavailable: the "
                   "rollout takes another node in its place while the stuck one is still down")

    def __init__(self, api: client.ApiClient, settings: ReconcilerSettings | None = None) -> None:
        super().__init__(api, settings)
        self.budget = _ForgetsStuckNodes(self.settings.max_unavailable, self._recorded_reboots)


class DeletesPods(Reconciler):
    name = "deletes-pods"
    description = "drains by deleting pods directly instead of evicting them: PodDisruptionBudgets ignored"

    async def drain(self, node_name: str) -> int:
        pods = await self.drainer.pods_on(node_name)
        for pod in pods:
            metadata = pod["metadata"]
            with contextlib.suppress(ApiException):  # gone already
                await asyncio.to_thread(self.drainer.core.delete_namespaced_pod, metadata["name"],
                                        metadata["namespace"])
        return len(pods)


VARIANTS: dict[str, type[Reconciler]] = {cls.name: cls for cls in (
    Reconciler, SemicolonNoProxy, NoReboot, EarlyReachability, NoCertImport, NoCertRemoval, NoEnvRemoval,
    UnquotedValues, RecordsWholeBundle, NoServiceWait, FixedServiceWait, RebootWithoutExitStatus, LeaksCredentials,
    AnnotatesCredentials, LeavesFiles,
    IgnoresMaxUnavailable, UncordonsAdminCordon, TrustsImportRecord, HttpFromHttps, NormalisesNoProxy,
    RemovesBySubject, NoTrustedCARestore, NeverRetriesUnreachable, RebootsAgainAfterRestart,
    AppliesStaleSettings, IgnoresHostKeys, NoWarningEvents, FreesStuckSlot, SkipsDrain, RebootsWhileTerminating,
    DeletesPods,
)} | LINUX_VARIANTS  # the Linux ones are caught only on a mixed fleet (``conformance --linux-nodes``)


def reconciler_class(name: str | None) -> type[Reconciler]:
    """The reconciler called ``name`` ("correct" or None: the reference one)."""
    if name is None:
        return Reconciler
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown reconciler variant {name!r}; choose one of "
                         + ", ".join(sorted(VARIANTS))) from None


def make_reconciler(api: client.ApiClient, settings: ReconcilerSettings | None = None,
                    variant: str | None = None) -> Reconciler:
    """A reconciler by variant name."""
    return reconciler_class(variant)(api, settings)
