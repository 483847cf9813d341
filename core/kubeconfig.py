"""Reading a kubeconfig the way the rest of proxyfleet needs it: the ``kubernetes`` client for API
calls, and the pieces a simulated kubelet needs (server, CA, token, the internal API URL)."""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client, config


class KubeconfigError(ValueError):
    reason = "KubeconfigError"


@dataclass(frozen=True)
class ClusterAccess:
    server: str
    ca_pem: bytes
    token: str

    @property
    def host(self) -> str:
        return urlsplit(self.server).hostname or ""

    @property
    def port(self) -> int:
        return urlsplit(self.server).port or 443


def read_access(path: Path) -> ClusterAccess:
    """Server, CA and bearer token of the kubeconfig's current context."""
    try:
        document: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from None
    try:
        context_name = document["current-context"]
        context = next(c["context"] for c in document["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in document["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in document["users"] if u["name"] == context["user"])
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
        token = user["token"]
        server = cluster["server"]
    except (KeyError, StopIteration, TypeError, ValueError) as exc:
        raise KubeconfigError(f"kubeconfig {path} lacks a server, CA data or token in its current "
                              f"context ({exc})") from None
    return ClusterAccess(server, ca_pem, token)


def api_client(path: Path, context: str | None = None) -> client.ApiClient:
    """The official client through the kubeconfig's ``context`` (None: its current context)."""
    try:
        api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(path), context=context)
    except (config.ConfigException, OSError) as exc:
        raise KubeconfigError(f"cannot load kubeconfig {path}: {exc}") from None
    if renews_nothing(path, context):
        # With a bearer token the client applies the kubeconfig's settings again before every
        # request (its hook reloads a credential that expires, then re-sets host, token and the
        # rest, recomputing the proxy settings from the environment): for a token that cannot
        # expire that is the same values each time, and it was a fifth of every call's CPU.
        api.configuration.refresh_api_key_hook = None
    return api


def renews_nothing(path: Path, context: str | None = None) -> bool:
    """Whether the credential of the kubeconfig's ``context`` (None: its current one) can never be
    renewed by the client: no ``exec`` plugin, no ``auth-provider`` (the only ones that give a token
    an expiry the client acts on). False when the file cannot be read this way."""
    try:
        document = yaml.safe_load(path.read_text())
        name = context or document["current-context"]
        entry = next(c["context"] for c in document["contexts"] if c["name"] == name)
        user = next(u["user"] for u in document["users"] if u["name"] == entry["user"])
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, StopIteration, TypeError):
        return False
    return isinstance(user, dict) and not ({"exec", "auth-provider"} & set(user))


def current_context(path: Path) -> str:
    """The name of the kubeconfig's current context, or a :class:`KubeconfigError` saying why there
    is none. A run that changes a cluster pins it (``kubectl config use-context`` on the same file
    while the run goes on must not move the run to another cluster)."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not YAML"
        raise KubeconfigError(f"cannot read kubeconfig {path}: {reason}") from None
    name = document.get("current-context") if isinstance(document, dict) else None
    if not isinstance(name, str) or not name:
        raise KubeconfigError(f"kubeconfig {path} has no current context (kubectl config use-context NAME)")
    contexts = document.get("contexts") or []
    if not any(isinstance(c, dict) and c.get("name") == name for c in contexts):
        raise KubeconfigError(f"kubeconfig {path}: its current context {name!r} is not among its contexts")
    return name


def internal_api_url(api: client.ApiClient) -> str:
    """``Infrastructure/cluster .status.apiServerInternalURL`` — what nodes use."""
    infrastructure = client.CustomObjectsApi(api).get_cluster_custom_object(
        "config.openshift.io", "v1", "infrastructures", "cluster")
    if not isinstance(infrastructure, dict):
        raise KubeconfigError("Infrastructure/cluster could not be read")
    url = str(infrastructure.get("status", {}).get("apiServerInternalURL", ""))
    if not url:
        raise KubeconfigError("Infrastructure/cluster has no status.apiServerInternalURL")
    return url


def loopback_address(host: str) -> str:
    """The lab only ever connects to loopback: refuse anything else."""
    candidate = "127.0.0.1" if host == "localhost" else host
    try:
        if ipaddress.ip_address(candidate).is_loopback:
            return candidate
    except ValueError:
        pass
    raise KubeconfigError(f"the API server {host} is not a loopback address; simulated kubelets "
                          "only talk to a lab control plane on 127.0.0.0/8")
