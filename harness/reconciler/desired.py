"""What a node should look like, computed from cluster objects, and what to change to get there.

Pure functions over plain data: ``desired_state`` (Proxy status + trusted-ca bundle -> target),
``plan_changes`` (target + what was observed on the node -> the changes).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.core.certificates import Certificate, CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import BUNDLE_KEY, PROXY_VARIABLES
from proxyfleet.core.rollout import applied_revision


class InvalidClusterInput(ValueError):
    """The cluster's settings cannot be applied safely; nothing is written to any node."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class DesiredState:
    environment: dict[str, str | None]  # machine variable -> value, None: must not exist
    certificates: tuple[Certificate, ...]
    bundle_pem: str
    # What a node holding this state has applied (``core.rollout``); None while the Proxy's status
    # does not reflect its spec yet. Not part of the node's state: not in ``config_hash``.
    revision: str | None = None

    @functools.cached_property
    def thumbprints(self) -> frozenset[str]:
        # cached: plans test every thumbprint of the bundle (~150) against it
        return frozenset(c.thumbprint for c in self.certificates)

    def config_hash(self) -> str:
        payload = json.dumps({"env": self.environment, "certs": sorted(self.thumbprints)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _check_value(name: str, value: str) -> None:
    bad = [c for c in value if ord(c) < 0x20 or ord(c) == 0x7F]
    if bad:
        raise InvalidClusterInput(
            "UnsafeValue", f"{name} contains control characters ({', '.join(repr(c) for c in sorted(set(bad)))}); "
                           "refusing to write it to any node")
    if len(value) > 32000:
        raise InvalidClusterInput("UnsafeValue", f"{name} is longer than Windows allows for a variable")


def desired_state(proxy: dict[str, Any] | None, trusted_ca: dict[str, Any] | None) -> DesiredState:
    """The node target for the cluster's Proxy (its status) and trusted-ca ConfigMap."""
    status = (proxy or {}).get("status") or {}
    values = {"HTTP_PROXY": status.get("httpProxy") or None,
              "HTTPS_PROXY": status.get("httpsProxy") or None,
              "NO_PROXY": status.get("noProxy") or None}
    configured = bool(values["HTTP_PROXY"] or values["HTTPS_PROXY"])
    if not configured:
        values = dict.fromkeys(PROXY_VARIABLES)
    for name, value in values.items():
        if value is not None:
            _check_value(name, value)
    bundle = ((trusted_ca or {}).get("data") or {}).get(BUNDLE_KEY, "") if configured else ""
    certificates: tuple[Certificate, ...] = ()
    if bundle:
        try:
            certificates = tuple(certificates_in_bundle(bundle.encode()))
        except CertificateFormatError as exc:
            raise InvalidClusterInput("InvalidTrustBundle", f"the trusted-ca bundle is not valid PEM: {exc}") from None
        if not certificates:
            raise InvalidClusterInput("InvalidTrustBundle", "the trusted-ca bundle holds no certificate")
    unique = {c.thumbprint: c for c in certificates}
    return DesiredState(values, tuple(unique.values()), bundle, applied_revision(proxy, trusted_ca))


_THUMBPRINT = re.compile(r"\b[0-9A-Fa-f]{40}\b")


def recorded_thumbprints(record: str) -> frozenset[str]:
    """The thumbprints an import record lists (one per line; anything else is ignored)."""
    return frozenset(t.upper() for t in _THUMBPRINT.findall(record))


@dataclass(frozen=True)
class ObservedState:
    """What one SSH round trip read from the node."""

    hostname: str
    environment: dict[str, str | None]
    root_thumbprints: frozenset[str]
    record: str  # this reconciler's import record on the node
    bundle_sha256: str | None
    boot_time: str
    service_start_times: dict[str, str | None]

    @property
    def imported(self) -> frozenset[str]:
        """Thumbprints this reconciler recorded as its own imports."""
        return recorded_thumbprints(self.record)


@dataclass
class ChangePlan:
    set_environment: dict[str, str] = field(default_factory=dict)
    delete_environment: list[str] = field(default_factory=list)
    import_certificates: list[Certificate] = field(default_factory=list)
    remove_certificates: list[str] = field(default_factory=list)
    record_before: list[str] = field(default_factory=list)  # own imports, widened first
    record_after: list[str] = field(default_factory=list)
    upload_bundle: bool = False
    # Nothing of ours is left to keep (no proxy, no own import): remove the bundle copy, the import
    # record and the certificate directory with this apply.
    cleanup: bool = False

    @property
    def changes_environment(self) -> bool:
        """Whether machine variables change: services read them only when they start, so only
        this needs a reboot (Windows reads the Root store live)."""
        return bool(self.set_environment or self.delete_environment)

    @property
    def changes_node(self) -> bool:
        return bool(self.set_environment or self.delete_environment or self.import_certificates
                    or self.remove_certificates)

    def summary(self) -> str:
        parts = []
        if self.set_environment:
            parts.append("set " + ", ".join(sorted(self.set_environment)))
        if self.delete_environment:
            parts.append("delete " + ", ".join(sorted(self.delete_environment)))
        if self.import_certificates:
            parts.append(f"import {len(self.import_certificates)} certificate(s)")
        if self.remove_certificates:
            parts.append(f"remove {len(self.remove_certificates)} certificate(s)")
        return "; ".join(parts) or "nothing to change"


def plan_changes(desired: DesiredState, observed: ObservedState) -> ChangePlan:
    """The difference between the target and the node. Only certificates this reconciler imported
    (its record) are ever removed: a root Windows already had is not its to take away, even when
    the bundle carried it too. The record is widened before imports and narrowed after removals,
    so a pass cut short never orphans an import."""
    plan = ChangePlan()
    for name, value in desired.environment.items():
        current = observed.environment.get(name)
        if value is None:
            if current is not None:
                plan.delete_environment.append(name)
        elif current != value:
            plan.set_environment[name] = value
    own = observed.imported
    plan.import_certificates = [c for c in desired.certificates if c.thumbprint not in observed.root_thumbprints]
    plan.remove_certificates = sorted(t for t in own - desired.thumbprints if t in observed.root_thumbprints)
    widened = own | {c.thumbprint for c in plan.import_certificates}
    plan.record_before = sorted(widened)
    plan.record_after = sorted(t for t in widened - set(plan.remove_certificates) if t in desired.thumbprints)
    bundle_hash = hashlib.sha256(desired.bundle_pem.encode()).hexdigest().upper() if desired.bundle_pem else None
    plan.upload_bundle = bundle_hash is not None and bundle_hash != observed.bundle_sha256
    plan.cleanup = not desired.bundle_pem and not plan.record_after
    return plan
