"""OpenShift's proxy semantics as pure functions (from cluster-network-operator and the installer):
validating ``Proxy.spec``, computing ``Proxy.status.noProxy``, merging the trusted CA bundle."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509

from proxyfleet.core.certificates import CertificateFormatError, pem_blocks
from proxyfleet.core.contract import (
    BUNDLE_KEY,
)
from proxyfleet.core.noproxy.urls import split_netloc

NO_PROXY_WILDCARD = "*"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DOMAIN = re.compile(rf"^\.?{_LABEL}(\.{_LABEL})*\.?$")
METADATA_PLATFORMS = {"AWS", "GCP", "Azure", "OpenStack"}
# Go's net/url accepts exactly these in userinfo (RFC 3986 unreserved, sub-delims, ':', '%', '@').
_USERINFO = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+,;=:%@]*$")


class ProxyConfigError(ValueError):
    """The spec is invalid; ``str()`` is the message CNO reports."""

    reason = "InvalidProxyConfig"


def _validate_uri(field: str, value: str) -> str:
    # CNO parses with Go's url.Parse, which refuses what Python's urlsplit silently strips or keeps.
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ProxyConfigError(f'invalid {field} URI: parse "{value!r}": net/url: invalid control character in URL')
    authority = value.partition("://")[2].partition("/")[0]
    if "@" in authority and not _USERINFO.match(authority.rpartition("@")[0]):
        raise ProxyConfigError(f"invalid {field} URI: net/url: invalid userinfo")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ProxyConfigError(f"invalid {field} URI: {exc}") from None
    if not parts.scheme or not parts.netloc:
        raise ProxyConfigError(f'invalid {field} URI: failed validating URI, no scheme for URI "{value}"')
    host = split_netloc(parts.netloc)[0]  # as written: upper case is not a valid host
    is_ip = True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        is_ip = False
    if not is_ip and not _DOMAIN.match(host):
        raise ProxyConfigError(f'invalid {field} URI: failed validating URI "{value}": invalid host "{host}"')
    if port is not None and not 1 <= port <= 65535:
        raise ProxyConfigError(f'invalid {field} URI: failed to validate port for URL "{value}"')
    return parts.scheme


def valid_no_proxy_entry(entry: str) -> bool:
    """A DNS-1123 subdomain (leading/trailing dot allowed), an IP, or a CIDR."""
    if _DOMAIN.match(entry) and len(entry) <= 253:
        return True
    try:
        ipaddress.ip_network(entry, strict=False)
        return True
    except ValueError:
        return False


def validate_proxy_spec(spec: dict[str, Any]) -> None:
    """Raise ProxyConfigError for an invalid ``Proxy.spec`` (DESIGN.md §2)."""
    for field in ("httpProxy", "httpsProxy", "noProxy"):
        if spec.get(field) is not None and not isinstance(spec[field], str):
            raise ProxyConfigError(f"{field} must be a string")
    endpoints = spec.get("readinessEndpoints")
    if endpoints is not None and (not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints)):
        raise ProxyConfigError("readinessEndpoints must be a list of strings")
    trusted = spec.get("trustedCA")
    if trusted is not None and (not isinstance(trusted, dict) or not isinstance(trusted.get("name", ""), str)):
        raise ProxyConfigError("trustedCA must be a mapping with a string name")
    http_proxy, https_proxy = spec.get("httpProxy") or "", spec.get("httpsProxy") or ""
    no_proxy = spec.get("noProxy") or ""
    if not (http_proxy or https_proxy or no_proxy):
        return
    if not (http_proxy or https_proxy):
        raise ProxyConfigError("at least one of httpProxy or httpsProxy is required when noProxy is set")
    if http_proxy and _validate_uri("httpProxy", http_proxy) != "http":
        raise ProxyConfigError("httpProxy requires a 'http' URI scheme")
    if https_proxy and _validate_uri("httpsProxy", https_proxy) not in ("http", "https"):
        raise ProxyConfigError("httpsProxy requires a 'http' or 'https' URI scheme")
    if no_proxy and no_proxy != NO_PROXY_WILDCARD:
        for raw in no_proxy.split(","):
            entry = raw.strip()
            if not valid_no_proxy_entry(entry):
                raise ProxyConfigError(f"invalid noProxy: {entry}")
    for endpoint in spec.get("readinessEndpoints") or []:
        scheme = _validate_uri(f"endpoint '{endpoint}'", endpoint)
        if scheme not in ("http", "https"):
            raise ProxyConfigError(f"readinessEndpoint '{endpoint}' requires a 'http' or 'https' scheme")


@dataclass(frozen=True)
class ClusterNetworking:
    """What status.noProxy is computed from (Network, Infrastructure, install-config)."""

    machine_networks: tuple[str, ...] = ()
    service_networks: tuple[str, ...] = ()
    cluster_networks: tuple[str, ...] = ()
    api_internal_url: str = ""
    platform: str = "None"
    region: str = ""


def platform_entries(platform: str, region: str) -> list[str]:
    if platform not in METADATA_PLATFORMS:
        return []
    entries = ["169.254.169.254"]
    if platform == "AWS" and region:
        entries.append(".ec2.internal" if region == "us-east-1" else f".{region}.compute.internal")
    if platform == "GCP":
        entries += ["metadata", "metadata.google.internal", "metadata.google.internal."]
    return entries


def compute_no_proxy(spec: dict[str, Any], cluster: ClusterNetworking) -> str:
    """``status.noProxy``: '*' for '*', empty without a proxy, else the sorted, de-duplicated set."""
    if not (spec.get("httpProxy") or spec.get("httpsProxy")):
        return ""
    if (spec.get("noProxy") or "") == NO_PROXY_WILDCARD:
        return NO_PROXY_WILDCARD
    entries = {"127.0.0.1", "localhost", ".svc", ".cluster.local"}
    entries.update(cluster.machine_networks)
    entries.update(platform_entries(cluster.platform, cluster.region))
    if cluster.api_internal_url:
        host = urlsplit(cluster.api_internal_url).hostname
        if host:
            entries.add(host)
    entries.update(cluster.service_networks)
    entries.update(cluster.cluster_networks)
    entries.update(v for v in (spec.get("noProxy") or "").split(",") if v)
    return ",".join(sorted(entries))


def compute_status(spec: dict[str, Any], cluster: ClusterNetworking) -> dict[str, str]:
    status = {"httpProxy": spec.get("httpProxy") or "", "httpsProxy": spec.get("httpsProxy") or "",
              "noProxy": compute_no_proxy(spec, cluster)}
    return {k: v for k, v in status.items() if v}


class TrustBundleError(ValueError):
    reason = "InvalidTrustedCA"


@dataclass(frozen=True)
class MergedBundle:
    pem: str
    warnings: tuple[str, ...]


def validate_bundle(pem: str, source: str) -> list[str]:
    """Raise TrustBundleError if ``pem`` holds no parsable certificate; return warnings."""
    try:
        blocks = pem_blocks(pem.encode())
    except CertificateFormatError as exc:
        raise TrustBundleError(f"{source}: {exc}") from None
    if not blocks:
        raise TrustBundleError(f"{source}: failed to parse certificate bundle: no certificates found")
    warnings = []
    for index, der in enumerate(blocks):
        try:
            certificate = x509.load_der_x509_certificate(der)
        except ValueError as exc:
            raise TrustBundleError(f"{source}: certificate {index + 1} is not valid: {exc}") from None
        try:
            is_ca = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            is_ca = False
        if not is_ca:
            warnings.append(f"{source}: certificate {index + 1} ({certificate.subject.rfc4514_string()}) "
                            "is not a CA certificate")
    return warnings


def merge_bundles(user_pem: str | None, system_pem: str) -> MergedBundle:
    """The user bundle followed by the system bundle, as CNO publishes it."""
    warnings: list[str] = []
    parts = []
    if user_pem:
        warnings = validate_bundle(user_pem, BUNDLE_KEY)
        parts.append(user_pem.strip() + "\n")
    parts.append(system_pem.strip() + "\n")
    return MergedBundle("".join(parts), tuple(warnings))
