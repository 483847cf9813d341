"""Files a person hands to ``proxyfleet up``/``repro``: a customer's Proxy object (as ``oc get
proxy cluster -o yaml`` prints it), a CA bundle, an install-config. Each is read and validated
completely before anything starts; a problem is one ``InputError`` line that names the file and
the fault, never a traceback and never a half-started lab."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.noproxy import redact_text, redact_url
from proxyfleet.simulators.controlplane.install import (
    InstallConfigError,
    field_name,
    load_install_config,
    load_yaml,
    plan,
)
from proxyfleet.simulators.controlplane.openshift import ProxyConfigError, validate_proxy_spec

PROXY_SPEC_FIELDS = {"httpProxy", "httpsProxy", "noProxy", "readinessEndpoints", "trustedCA"}
PROXY_TOP_FIELDS = {"apiVersion", "kind", "metadata", "spec", "status"}


class InputError(ValueError):
    """A user-supplied file is missing or invalid; ``str()`` is one line for the terminal."""


def _one_line(text: str) -> str:
    return redact_text(" ".join(str(text).split()))


def _read(path: Path, what: str) -> str:
    if not path.exists():
        raise InputError(f"{what} {path}: no such file")
    if not path.is_file():
        raise InputError(f"{what} {path}: not a regular file")
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {path}: cannot be read: {_one_line(str(exc))}") from None


def _yaml(path: Path, what: str) -> Any:
    try:
        return load_yaml(_read(path, what))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"{what} {path} is not valid YAML{where}: {_one_line(problem)}") from None


@dataclass(frozen=True)
class ProxyTarget:
    """A proxy host and port the customer's URLs name, and the credentials they carry."""

    host: str
    port: int
    auth: str | None  # "user:password", decoded


@dataclass
class CustomerProxy:
    """The validated spec of a customer's Proxy object."""

    spec: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def http_proxy(self) -> str:
        return str(self.spec.get("httpProxy") or "")

    @property
    def https_proxy(self) -> str:
        return str(self.spec.get("httpsProxy") or "")

    @property
    def no_proxy(self) -> str:
        return str(self.spec.get("noProxy") or "")

    def targets(self) -> list[ProxyTarget]:
        """Every distinct proxy endpoint the URLs name (the lab maps each to its proxy)."""
        found: dict[tuple[str, int], ProxyTarget] = {}
        for url in (self.http_proxy, self.https_proxy):
            if not url:
                continue
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            auth = f"{unquote(parts.username)}:{unquote(parts.password or '')}" if parts.username else None
            found[(str(parts.hostname).lower(), port)] = ProxyTarget(str(parts.hostname).lower(), port, auth)
        return list(found.values())


def read_proxy(path: Path) -> CustomerProxy:
    """A Proxy object in YAML; validated exactly as the cluster's network operator would."""
    data = _yaml(path, "--proxy")
    if not isinstance(data, dict):
        raise InputError(f"--proxy {path}: expected a Proxy object (a YAML mapping), got {type(data).__name__}")
    kind = data.get("kind")
    if kind is not None and kind != "Proxy":
        raise InputError(f"--proxy {path}: kind is not 'Proxy' (expected oc get proxy cluster -o yaml)")
    unknown_top = sorted(set(data) - PROXY_TOP_FIELDS, key=str)
    if unknown_top:
        raise InputError(f'--proxy {path}: unknown field "{field_name(unknown_top[0])}"')
    spec = data.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise InputError(f"--proxy {path}: spec must be a mapping")
    unknown = sorted(set(spec) - PROXY_SPEC_FIELDS, key=str)
    if unknown:
        raise InputError(f'--proxy {path}: unknown field "spec.{field_name(unknown[0])}"')
    for key in ("httpProxy", "httpsProxy", "noProxy"):
        if key in spec and spec[key] is not None and not isinstance(spec[key], str):
            raise InputError(f"--proxy {path}: spec.{key} must be a string")
    try:
        validate_proxy_spec(spec)
    except ProxyConfigError as exc:
        raise InputError(f"--proxy {path}: invalid Proxy spec: {_one_line(str(exc))}") from None
    proxy = CustomerProxy(dict(spec))
    if not (proxy.http_proxy or proxy.https_proxy):
        raise InputError(f"--proxy {path}: the spec sets neither httpProxy nor httpsProxy; nothing to reproduce")
    for url in (proxy.http_proxy, proxy.https_proxy):
        if url and urlsplit(url).scheme == "https":
            raise InputError(f"--proxy {path}: {redact_url(url)} is a TLS (https://) proxy; the lab's proxy speaks "
                             "plain HTTP, so this cannot be reproduced faithfully")
    auths = {t.auth for t in proxy.targets()}
    if len(auths) > 1:
        raise InputError(f"--proxy {path}: httpProxy and httpsProxy carry different credentials; the lab proxy "
                         "accepts one set")
    if spec.get("readinessEndpoints"):
        proxy.warnings.append("spec.readinessEndpoints dropped: they name the customer's endpoints, which the "
                              "lab does not have")
        proxy.spec.pop("readinessEndpoints")
    trusted = (spec.get("trustedCA") or {}).get("name") if isinstance(spec.get("trustedCA"), dict) else None
    if trusted:
        proxy.warnings.append(f"spec.trustedCA.name {trusted!r} is replaced by the lab's ConfigMap holding --ca-bundle")
    proxy.spec.pop("trustedCA", None)
    return proxy


def read_ca_bundle(path: Path) -> bytes:
    """A PEM bundle with at least one certificate, every block a valid certificate."""
    text = _read(path, "--ca-bundle")
    try:
        certificates = certificates_in_bundle(text.encode())
    except (CertificateFormatError, ValueError) as exc:
        raise InputError(f"--ca-bundle {path}: not a valid PEM certificate bundle: {_one_line(str(exc))}") from None
    if not certificates:
        raise InputError(f"--ca-bundle {path}: holds no certificate (expected PEM 'BEGIN CERTIFICATE' blocks)")
    return text.encode()


def read_install_config(path: Path) -> str:
    """An install-config.yaml the embedded installer accepts (text, validated)."""
    text = _read(path, "--install-config")
    _yaml(path, "--install-config")  # YAML errors with a line number first
    try:
        config = load_install_config(text)
        plan(config)
        proxy = config.get("proxy") or {}
        if proxy:
            validate_proxy_spec(proxy)
    except (InstallConfigError, ProxyConfigError) as exc:
        raise InputError(f"--install-config {path}: {_one_line(str(exc))}") from None
    return text
