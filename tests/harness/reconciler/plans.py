"""Cluster inputs and node observations for the reconciler's pure tests."""

from __future__ import annotations

import trustme
from kubernetes import client

from proxyfleet.core.certificates import Certificate
from proxyfleet.harness.reconciler.controller import Reconciler
from proxyfleet.harness.reconciler.desired import ObservedState
from proxyfleet.harness.reconciler.variants import make_reconciler

PROXY = {"status": {"httpProxy": "http://p:3128", "httpsProxy": "http://p:3128", "noProxy": ".svc,10.0.0.0/8"}}


def bundle(*cas: trustme.CA) -> dict[str, dict[str, str]]:
    return {"data": {"ca-bundle.crt": "".join(ca.cert_pem.bytes().decode() for ca in cas)}}


def cert(ca: trustme.CA) -> Certificate:
    return Certificate.from_pem(ca.cert_pem.bytes())


def variant(name: str) -> Reconciler:
    """A broken variant, for its pure hooks (nothing is started; the client never connects)."""
    return make_reconciler(client.ApiClient(), None, name)


def observed(env: dict[str, str | None] | None = None, root: set[str] | None = None,
             imported: str = "") -> ObservedState:
    return ObservedState("win-0001", env or dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")),
                         frozenset(root or set()), imported, None, "boot-1", {})
