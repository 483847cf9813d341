"""What a node has applied, as one comparable value both sides compute the same way: the
reconciler writes it on a Node after verifying the node (annotation ``proxyfleet.io/applied``), and
``proxyfleet rollout status`` waits until every instance shows the cluster's current one.

The value is ``<Proxy metadata.generation>/<trusted-ca resourceVersion>`` (``…/none`` while no proxy
is configured: nodes then hold no bundle). It only names a generation once the Proxy's status
reflects its spec — before that, what a reconciler applies is the previous generation's status.

``assess`` tells, from one ``read_snapshot``, which instances claim the current revision: the
judge uses the same reading to end a step early when a reconciler claims a node it has not
configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.apijson import raw_json
from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import (
    APPLIED,
    BUNDLE_KEY,
    CONFIG_GROUP,
    CONFIG_VERSION,
    INSTANCES,
    MESSAGE,
    OPENSHIFT_CONFIG,
    OPENSHIFT_CONFIG_MANAGED,
    PROXIES,
    PROXY_NAME,
    STATE_LABEL,
    TRUSTED_BUNDLE_NAME,
    TRUSTED_CA,
)
from proxyfleet.core.informer import internal_ip


def status_reflects_spec(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether the cluster's proxy controller has published ``spec`` in ``status``: the same URLs,
    and every spec noProxy entry among status.noProxy (the controller adds the cluster's own)."""
    if (spec.get("httpProxy") or None) != (status.get("httpProxy") or None):
        return False
    if (spec.get("httpsProxy") or None) != (status.get("httpsProxy") or None):
        return False
    if not (status.get("httpProxy") or status.get("httpsProxy")):
        return True
    published = {e.strip() for e in str(status.get("noProxy") or "").split(",")}
    return all(e.strip() in published for e in str(spec.get("noProxy") or "").split(",") if e.strip())


def applied_revision(proxy: Mapping[str, Any] | None, trusted_ca: Mapping[str, Any] | None) -> str | None:
    """The revision a node holds once it carries this Proxy's status and this trusted-ca bundle;
    None while the Proxy's status does not reflect its spec yet."""
    if proxy is None:
        return None
    metadata = proxy.get("metadata") or {}
    spec, status = proxy.get("spec") or {}, proxy.get("status") or {}
    if not status_reflects_spec(spec, status):
        return None
    configured = bool(status.get("httpProxy") or status.get("httpsProxy"))
    bundle = str(((trusted_ca or {}).get("metadata") or {}).get("resourceVersion") or "none") if configured else "none"
    return f"{metadata.get('generation', 0)}/{bundle}"


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


def _thumbprints(configmap: dict[str, Any] | None) -> frozenset[str] | None:
    pem = ((configmap or {}).get("data") or {}).get(BUNDLE_KEY)
    if not pem:
        return frozenset()
    try:  # certificates_in_bundle parses a bundle once (its own cache): the judge reads the same three every poll
        return frozenset(c.thumbprint for c in certificates_in_bundle(str(pem).encode()))
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


def read_snapshot(api: client.ApiClient, namespace: str, *, nodes: bool = True) -> Snapshot:
    """One look at the cluster (blocking: run it in a thread from async code); without ``nodes``,
    no Node is read (the caller has them: a watch cache, or Nodes just read by name)."""
    core = client.CoreV1Api(api)

    def configmap(name: str, in_namespace: str) -> dict[str, Any] | None:
        try:
            return raw_json(core.read_namespaced_config_map, name, in_namespace)
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
    listed = raw_json(core.list_node) if nodes else {}
    return Snapshot(proxy=proxy, trusted_ca=configmap(TRUSTED_CA, namespace),
                    managed_bundle=configmap(TRUSTED_BUNDLE_NAME, OPENSHIFT_CONFIG_MANAGED),
                    user_bundle=configmap(user_name, OPENSHIFT_CONFIG) if user_name else None,
                    instances=sorted((instances or {}).get("data") or {}), nodes=list(listed.get("items") or []))
