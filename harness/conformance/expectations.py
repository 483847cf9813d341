"""What every node must show, computed from the cluster alone (never from a reconciler):
the Proxy status and the cluster's merged trusted CA bundle, and for each destination the route
the node's Go clients (containerd, kubelet) take under that environment."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.certificates import Certificate, CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import BUNDLE_KEY, OPENSHIFT_CONFIG_MANAGED, PROXY, PROXY_VARIABLES, TRUSTED_BUNDLE_NAME
from proxyfleet.core.noproxy import CLIENTS, redact_url
from proxyfleet.core.rollout import status_reflects_spec


@dataclass(frozen=True)
class Route:
    """How a client reaches a URL: ``proxy`` is None for a direct connection."""

    proxy: str | None
    reason: str

    def describe(self) -> str:
        return f"via {redact_url(self.proxy)}" if self.proxy else "direct"


@dataclass(frozen=True)
class Expected:
    """The node target for one cluster state."""

    environment: dict[str, str | None]
    bundle: dict[str, str]  # thumbprint -> subject, empty when no proxy is configured
    spec: dict[str, Any]  # Proxy spec, to tell when the status has caught up with it

    @property
    def configured(self) -> bool:
        return bool(self.environment["HTTP_PROXY"] or self.environment["HTTPS_PROXY"])

    def route(self, url: str, client_name: str = "go") -> Route:
        """The route ``client_name`` takes to ``url`` on a Windows node, where variable names are
        case-insensitive (curl.exe finds ``HTTP_PROXY`` when it asks for ``http_proxy``)."""
        env = {k: v for k, v in self.environment.items() if v is not None}
        env.update({k.lower(): v for k, v in env.items()})
        decision = CLIENTS[client_name].decide(env, url)
        return Route(decision.proxy if decision.decision == "proxy" else None, decision.reason)

    def node_target(self) -> tuple[tuple[tuple[str, str | None], ...], frozenset[str]]:
        """What a node holds for this state (to tell whether a step changes a node)."""
        return tuple(sorted(self.environment.items())), frozenset(self.bundle)


def _bundle(pem: str) -> dict[str, str]:
    try:
        return {c.thumbprint: c.subject for c in certificates_in_bundle(pem.encode())}
    except CertificateFormatError:
        return {}


def expected_from(proxy: dict[str, Any], managed_bundle: str) -> Expected:
    """The node target for a Proxy object and the managed trusted bundle's PEM (pure)."""
    status = proxy.get("status") or {}
    environment: dict[str, str | None] = {
        "HTTP_PROXY": status.get("httpProxy") or None,
        "HTTPS_PROXY": status.get("httpsProxy") or None,
        "NO_PROXY": status.get("noProxy") or None,
    }
    configured = bool(environment["HTTP_PROXY"] or environment["HTTPS_PROXY"])
    if not configured:
        environment = dict.fromkeys(PROXY_VARIABLES)
    # Nodes get the trusted bundle with the proxy (DESIGN.md §1): no proxy, no certificates.
    return Expected(environment, _bundle(managed_bundle) if configured else {}, dict(proxy.get("spec") or {}))


async def expected_from_cluster(api: client.ApiClient) -> Expected:
    proxy: Any = await asyncio.to_thread(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
    try:
        bundle = await asyncio.to_thread(client.CoreV1Api(api).read_namespaced_config_map,
                                         TRUSTED_BUNDLE_NAME, OPENSHIFT_CONFIG_MANAGED)
        pem = (bundle.data or {}).get(BUNDLE_KEY, "")
    except ApiException as exc:
        if exc.status != 404:
            raise
        pem = ""
    return expected_from(proxy, pem)


def status_matches_spec(expected: Expected) -> bool:
    """Whether Proxy status reflects the spec (the cluster's proxy controller has caught up)."""
    env = expected.environment
    return status_reflects_spec(expected.spec, {"httpProxy": env["HTTP_PROXY"], "httpsProxy": env["HTTPS_PROXY"],
                                                "noProxy": env["NO_PROXY"]})


def certificates_of(pem: bytes) -> dict[str, str]:
    return {c.thumbprint: c.subject for c in certificates_in_bundle(pem)}


def thumbprint_of(pem: bytes) -> str:
    return Certificate.from_pem(pem).thumbprint
