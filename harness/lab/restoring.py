"""Putting a cluster back from a ``ClusterSnapshot``: each saved object on its own, so one that
cannot be put back (a conflict that does not clear, an expired token, a 422) does not keep the
others as the run left them, and every failure is reported.

Each object is a step that reads the object as it is now, decides what would change (``plan``:
lines for a person, credentials redacted) and changes it (``apply``). A step whose write fails
with a conflict or a passing server error is tried again from a fresh read, with backoff; any
other error fails that step only. A trusted CA ConfigMap the run created is deleted only once the
Proxy no longer names it (deleting it first would leave the Proxy naming a missing bundle), so the
Proxy goes first.

Refusing a snapshot of another cluster is the caller's decision (``check_identity``): a run
restores what it saved itself; ``proxyfleet restore`` reads a file someone names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, PROXY, TRUSTED_CA
from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.lab.snapshot import ClusterIdentity, ClusterSnapshot, SnapshotError, call, read_configmap

# Answers worth another try from a fresh read: a conflict (someone wrote meanwhile), throttling,
# a server or gateway that is passing through trouble.
RETRY_STATUSES = frozenset({409, 429, 500, 502, 503, 504})
ATTEMPTS = 6
BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 4.0)

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class RestoreReport:
    """What a restore did and what it could not do, one line each."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.failed


class _Blocked(Exception):
    """A step that must not run yet (another object still depends on what it would change)."""


class RestoreStep(Protocol):
    @property
    def what(self) -> str:
        """The object, for a person: ``ConfigMap ns/name``."""

    async def plan(self, api: client.ApiClient) -> list[str]:
        """What ``apply`` would change now ([] for nothing), for a person to read."""

    async def apply(self, api: client.ApiClient) -> str | None:
        """Change it; what was done (None: nothing to do)."""


def _spec_lines(spec: dict[str, Any]) -> dict[str, str]:
    """Each field of a Proxy spec as JSON text, credentials redacted."""
    return {name: redact_text(json.dumps(value, sort_keys=True)) for name, value in spec.items()}


@dataclass
class ProxySpecStep:
    saved: dict[str, Any]
    what: str = "Proxy/cluster spec"

    async def _current(self, api: client.ApiClient) -> dict[str, Any]:
        found: dict[str, Any] = await call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
        return found

    async def plan(self, api: client.ApiClient) -> list[str]:
        now, saved = _spec_lines((await self._current(api)).get("spec") or {}), _spec_lines(self.saved)
        return [f"{self.what}: {name}: {now.get(name, '(unset)')} -> {saved.get(name, '(unset)')}"
                for name in sorted(set(now) | set(saved)) if now.get(name) != saved.get(name)]

    async def apply(self, api: client.ApiClient) -> str | None:
        current = await self._current(api)
        if (current.get("spec") or {}) == self.saved:
            return None
        current["spec"] = self.saved  # with its resourceVersion: a write meanwhile is a 409, tried again
        await call(client.CustomObjectsApi(api).replace_cluster_custom_object, *PROXY, current)
        return f"{self.what} restored"


@dataclass
class ConfigMapStep:
    namespace: str
    name: str
    saved: dict[str, Any] | None

    @property
    def what(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    async def plan(self, api: client.ApiClient) -> list[str]:
        current = await read_configmap(client.CoreV1Api(api), api, self.namespace, self.name)
        if current == self.saved:
            return []
        if self.saved is None:
            return [f"{self.what}: deleted (the run created it)"]
        if current is None:
            return [f"{self.what}: created again (the run deleted it)"]
        changed = sorted({*_keys(current), *_keys(self.saved)} - {k for k in _keys(current)
                                                                  if _value(current, k) == _value(self.saved, k)})
        return [f"{self.what}: restored ({', '.join(changed)} differ)"]

    async def apply(self, api: client.ApiClient) -> str | None:
        core = client.CoreV1Api(api)
        current = await read_configmap(core, api, self.namespace, self.name)
        if current == self.saved:
            return None
        if self.saved is None:
            if self.namespace == OPENSHIFT_CONFIG:
                proxy = await call(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
                if ((proxy.get("spec") or {}).get("trustedCA") or {}).get("name") == self.name:
                    raise _Blocked("left in place: the Proxy still names it as its trusted CA")
            try:
                await call(core.delete_namespaced_config_map, self.name, self.namespace)
            except ApiException as exc:
                if exc.status != 404:  # gone already: what the step wanted
                    raise
            return f"{self.what} deleted (the run created it)"
        body = {**self.saved, "metadata": {**self.saved.get("metadata", {}), "name": self.name,
                                           "namespace": self.namespace}}
        if current is None:
            await call(core.create_namespaced_config_map, self.namespace, body)
            return f"{self.what} created again (the run deleted it)"
        await call(core.replace_namespaced_config_map, self.name, self.namespace, body)
        return f"{self.what} restored"


def _keys(configmap: dict[str, Any]) -> set[str]:
    """Every data key and label/annotation name of a saved ConfigMap, qualified by where it is."""
    found = {f"{part} {k}" for part in ("data", "binaryData") for k in configmap.get(part) or {}}
    metadata = configmap.get("metadata") or {}
    return found | {f"{part} {k}" for part in ("labels", "annotations") for k in metadata.get(part) or {}}


def _value(configmap: dict[str, Any], key: str) -> object:
    part, name = key.split(" ", 1)
    holder = configmap.get(part) if part in ("data", "binaryData") else (configmap.get("metadata") or {}).get(part)
    return (holder or {}).get(name)


@dataclass
class TrustedCaStep:
    """The operator's ``trusted-ca``: created again (labels only: its bundle is injected) if the run
    left it deleted, or given back the labels it lost; its data is never touched."""

    labels: dict[str, str]
    what: str = f"ConfigMap {OPERATOR_NAMESPACE}/{TRUSTED_CA}"

    async def _lost(self, api: client.ApiClient) -> dict[str, str] | None:
        """None: it does not exist; else the labels it lost."""
        current = await read_configmap(client.CoreV1Api(api), api, OPERATOR_NAMESPACE, TRUSTED_CA)
        if current is None:
            return None
        labels = current["metadata"].get("labels") or {}
        return {k: v for k, v in self.labels.items() if labels.get(k) != v}

    async def plan(self, api: client.ApiClient) -> list[str]:
        lost = await self._lost(api)
        if lost is None:
            return [f"{self.what}: created again with its labels"]
        return [f"{self.what}: labels restored: {', '.join(sorted(lost))}"] if lost else []

    async def apply(self, api: client.ApiClient) -> str | None:
        core = client.CoreV1Api(api)
        lost = await self._lost(api)
        if lost is None:
            # A 409 here means the operator re-created it meanwhile: the next try reads its labels.
            await call(core.create_namespaced_config_map, OPERATOR_NAMESPACE,
                       {"metadata": {"name": TRUSTED_CA, "namespace": OPERATOR_NAMESPACE, "labels": self.labels}})
            return f"{self.what} created again with its labels (the bundle is injected)"
        if not lost:
            return None
        await call(core.patch_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE, {"metadata": {"labels": lost}})
        return f"{self.what} labels restored: {', '.join(sorted(lost))}"


@dataclass
class CordonStep:
    """Uncordon a Node the run cordoned, if it is cordoned now (it was schedulable before the run:
    the snapshot's check makes sure)."""

    node: str

    @property
    def what(self) -> str:
        return f"Node {self.node}"

    async def _cordoned(self, api: client.ApiClient) -> bool:
        try:
            node = await call(client.CoreV1Api(api).read_node, self.node)
        except ApiException as exc:
            if exc.status == 404:
                return False  # gone: nothing to uncordon
            raise
        return bool(node.spec and node.spec.unschedulable)

    async def plan(self, api: client.ApiClient) -> list[str]:
        return [f"{self.what}: uncordoned (the run's maintenance cordon)"] if await self._cordoned(api) else []

    async def apply(self, api: client.ApiClient) -> str | None:
        if not await self._cordoned(api):
            return None
        await call(client.CoreV1Api(api).patch_node, self.node, {"spec": {"unschedulable": False}})
        return f"{self.what} uncordoned (the run's maintenance cordon)"


def steps(snapshot: ClusterSnapshot) -> list[RestoreStep]:
    """Every object to put back, the Proxy first (a bundle the run created goes once it is unnamed)."""
    found: list[RestoreStep] = [ProxySpecStep(snapshot.proxy_spec)]
    found += [ConfigMapStep(namespace, name, saved) for (namespace, name), saved in snapshot.configmaps.items()]
    if snapshot.trusted_ca_labels is not None:
        found.append(TrustedCaStep(snapshot.trusted_ca_labels))
    found += [CordonStep(name) for name in snapshot.run_cordons if snapshot.node_cordons.get(name) is False]
    return found


def _api_error(exc: ApiException) -> str:
    """``422 Invalid: <the API server's message>``: the Status object's own reason where it sent one
    (the HTTP reason phrase differs between servers and Python versions: 3.13 says "Unprocessable
    Content" where kube-apiserver says "Unprocessable Entity")."""
    message, reason = "", exc.reason
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        status = json.loads(exc.body or "")
        message = str(status.get("message") or "")
        reason = str(status.get("reason") or reason)
    return redact_text(f"{exc.status} {reason}" + (f": {message}" if message else ""))


async def _attempt(step: RestoreStep, api: client.ApiClient, attempts: int, sleep: Sleep) -> str | None:
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            return await step.apply(api)
        except ApiException as exc:
            if exc.status not in RETRY_STATUSES or last:
                raise SnapshotError(f"{step.what}: {_api_error(exc)}" + (
                    f" (after {attempts} attempts)" if exc.status in RETRY_STATUSES else "")) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if last:
                raise SnapshotError(f"{step.what}: the API server did not answer ({type(exc).__name__}: "
                                    f"{redact_text(str(exc))[:200]}) after {attempts} attempts") from None
        await sleep(BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)])
    raise AssertionError("unreachable")


async def restore(snapshot: ClusterSnapshot, api: client.ApiClient, *, attempts: int = ATTEMPTS,
                  sleep: Sleep = asyncio.sleep) -> RestoreReport:
    """Put every saved object back, each on its own; what was done and what failed."""
    report = RestoreReport()
    for step in steps(snapshot):
        try:
            done = await _attempt(step, api, attempts, sleep)
        except _Blocked as exc:
            report.failed.append(f"{step.what}: {exc}")
        except SnapshotError as exc:
            report.failed.append(str(exc))
        else:
            if done:
                report.done.append(done)
    return report


async def plan(snapshot: ClusterSnapshot, api: client.ApiClient) -> list[str]:
    """What ``restore`` would change now, one line per difference (credentials redacted)."""
    lines = []
    for step in steps(snapshot):
        try:
            lines += await step.plan(api)
        except ApiException as exc:
            lines.append(f"{step.what}: cannot be read ({_api_error(exc)})")
    return lines


def check_identity(snapshot: ClusterSnapshot, here: ClusterIdentity, source: str, force: bool) -> str | None:
    """None when ``snapshot`` was taken of the cluster ``here`` is; else why not — an error unless
    ``force`` (then a warning for the caller to print)."""
    saved = snapshot.cluster
    taken = f" at {snapshot.taken:%Y-%m-%d %H:%M:%S %Z}" if snapshot.taken else ""
    if saved is not None and saved.same_cluster(here):
        return None
    why = (f"{source} was saved from another cluster ({saved.describe()}){taken}; this kubeconfig reaches "
           f"{here.describe()}" if saved is not None else
           f"{source} is a snapshot of an older proxyfleet, which did not record its cluster")
    if not force:
        raise SnapshotError(f"{why}: not restored (check the kubeconfig; --force restores it here anyway, "
                            "after showing what would change)")
    return why


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored meanwhile: a restore cut short leaves a cluster half put back."""
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
