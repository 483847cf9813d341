"""``proxyfleet rollout status``: wait, like ``kubectl rollout status``, until every Windows instance
has applied the cluster's current proxy settings and trusted CA bundle.

The current revision (``core.rollout``) is read from the cluster on every look, so a change that
lands while waiting is waited for too. Nothing is inferred from a state label alone: a node counts
only when its ``proxyfleet.io/applied`` annotation names the current revision, which the
reconciler writes after verifying the node.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import (
    BUNDLE_KEY,
    CONFIG_GROUP,
    CONFIG_VERSION,
    INSTANCES,
    OPENSHIFT_CONFIG,
    OPENSHIFT_CONFIG_MANAGED,
    OPERATOR_NAMESPACE,
    PROXIES,
    PROXY_NAME,
    TRUSTED_BUNDLE_NAME,
    TRUSTED_CA,
)
from proxyfleet.core.informer import internal_ip
from proxyfleet.core.kubeconfig import KubeconfigError, api_client
from proxyfleet.core.rollout import APPLIED, applied_revision
from proxyfleet.harness.reconciler.reporting import MESSAGE, STATE_LABEL

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float:
    """Seconds in a Go/kubectl duration (``90s``, ``5m``, ``1h30m``) or a plain number of seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r} (use e.g. 90s, 5m, 1h30m)")
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


@dataclass
class Snapshot:
    """The objects one look at the cluster reads."""

    proxy: dict[str, Any] | None
    trusted_ca: dict[str, Any] | None  # the bundle injected into the operator's namespace
    managed_bundle: dict[str, Any] | None  # openshift-config-managed/trusted-ca-bundle
    user_bundle: dict[str, Any] | None  # openshift-config/<Proxy spec.trustedCA.name>
    instances: list[str]  # windows-instances addresses
    nodes: list[dict[str, Any]]


@dataclass
class Assessment:
    """Where the rollout stands."""

    revision: str | None  # None: the cluster has not published the change yet
    waiting_for: str = ""  # why there is no revision yet
    done: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # "name (state: message)"
    failed: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.revision is not None and not self.pending and not self.failed


def _thumbprints(configmap: dict[str, Any] | None) -> set[str] | None:
    pem = ((configmap or {}).get("data") or {}).get(BUNDLE_KEY)
    if not pem:
        return set()
    try:
        return {c.thumbprint for c in certificates_in_bundle(str(pem).encode())}
    except CertificateFormatError:
        return None


def _bundle_published(snapshot: Snapshot) -> bool:
    """The user's CA is merged into the managed bundle, and that is what was injected. (A CA only
    removed from the user bundle cannot be told from a system root here: that case is judged by
    the injected bundle's revision alone.)"""
    user, managed, injected = (_thumbprints(snapshot.user_bundle), _thumbprints(snapshot.managed_bundle),
                               _thumbprints(snapshot.trusted_ca))
    if user is None or managed is None or injected is None:
        return False
    return user <= managed and managed == injected


def assess(snapshot: Snapshot) -> Assessment:
    """Pure: the current revision, and each instance's standing against it."""
    proxy = snapshot.proxy
    revision = applied_revision(proxy, snapshot.trusted_ca)
    if proxy is None:
        return Assessment(None, "the cluster has no Proxy object")
    if revision is None:
        return Assessment(None, "the cluster to publish the Proxy change (status does not reflect spec yet)")
    status = proxy.get("status") or {}
    if (status.get("httpProxy") or status.get("httpsProxy")) and not _bundle_published(snapshot):
        return Assessment(None, "the trusted CA bundle to be merged and injected")
    by_address = {internal_ip(n): n for n in snapshot.nodes}
    result = Assessment(revision)
    for address in sorted(snapshot.instances):
        node = by_address.get(address)
        if node is None:
            result.pending.append(f"{address} (no Node yet)")
            continue
        metadata = node.get("metadata") or {}
        name = metadata.get("name", address)
        state = (metadata.get("labels") or {}).get(STATE_LABEL, "unknown")
        message = (metadata.get("annotations") or {}).get(MESSAGE, "")
        if state == "failed":
            result.failed.append(f"{name}: {message}")
        elif state == "configured" and (metadata.get("annotations") or {}).get(APPLIED) == revision:
            result.done.append(name)
        else:
            result.pending.append(f"{name} ({state}{': ' + message if message else ''})")
    return result


def read_snapshot(api: client.ApiClient, namespace: str) -> Snapshot:
    core = client.CoreV1Api(api)

    def configmap(name: str, in_namespace: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = api.sanitize_for_serialization(  # type: ignore[no-untyped-call]
                core.read_namespaced_config_map(name, in_namespace))
            return found
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    try:
        found: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            CONFIG_GROUP, CONFIG_VERSION, PROXIES, PROXY_NAME)
        proxy: dict[str, Any] | None = dict(found)
    except ApiException as exc:
        if exc.status != 404:
            raise
        proxy = None
    user_name = (((proxy or {}).get("spec") or {}).get("trustedCA") or {}).get("name")
    instances = configmap(INSTANCES, namespace)
    nodes = api.sanitize_for_serialization(core.list_node())  # type: ignore[no-untyped-call]
    return Snapshot(proxy=proxy, trusted_ca=configmap(TRUSTED_CA, namespace),
                    managed_bundle=configmap(TRUSTED_BUNDLE_NAME, OPENSHIFT_CONFIG_MANAGED),
                    user_bundle=configmap(user_name, OPENSHIFT_CONFIG) if user_name else None,
                    instances=sorted((instances or {}).get("data") or {}), nodes=list(nodes.get("items") or []))


def _describe(found: Assessment) -> str:
    if found.revision is None:
        return f"waiting for {found.waiting_for}"
    total = len(found.done) + len(found.pending) + len(found.failed)
    line = f"{len(found.done)} of {total} instance(s) applied revision {found.revision}"
    if found.pending:
        line += "; waiting for " + ", ".join(found.pending[:5]) + (" …" if len(found.pending) > 5 else "")
    return line


@click.group()
def rollout() -> None:
    """Follow the rollout of the cluster's proxy settings to the Windows instances."""


@rollout.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--namespace", default=OPERATOR_NAMESPACE, show_default=True,
              help="Where windows-instances and trusted-ca live.")
@click.option("--timeout", "timeout_text", default="10m", show_default=True,
              help="Give up after this long (90s, 5m, 1h30m); exit 1.")
@click.option("--poll-seconds", default=1.0, show_default=True, type=click.FloatRange(0.05, 60))
def status(kubeconfig: Path, namespace: str, timeout_text: str, poll_seconds: float) -> None:
    """Wait until every instance in windows-instances has applied the current Proxy generation and
    trusted CA bundle revision (exit 0); exit 1 on timeout or when an instance is failed."""
    try:
        timeout = parse_duration(timeout_text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--timeout") from None
    try:
        api = api_client(kubeconfig)
    except KubeconfigError as exc:
        raise click.ClickException(str(exc)) from exc
    deadline = time.monotonic() + timeout
    shown = ""
    try:
        while True:
            found = assess(read_snapshot(api, namespace))
            line = _describe(found)
            if line != shown:
                click.echo(line)
                shown = line
            if found.failed:
                for failure in found.failed:
                    click.echo(f"error: instance {failure}", err=True)
                raise SystemExit(1)
            if found.complete:
                click.echo(f"rollout complete: {len(found.done)} instance(s) applied revision {found.revision}")
                return
            if time.monotonic() >= deadline:
                click.echo(f"error: timed out after {timeout_text} {shown}", err=True)
                raise SystemExit(1)
            time.sleep(poll_seconds)  # the next look at the cluster
    finally:
        api.close()  # type: ignore[no-untyped-call]
