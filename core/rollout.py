"""What a node has applied, as one comparable value both sides compute the same way: the
reconciler writes it on a Node after verifying the node (annotation ``proxyfleet.io/applied``), and
``proxyfleet rollout status`` waits until every instance shows the cluster's current one.

The value is ``<Proxy metadata.generation>/<trusted-ca resourceVersion>`` (``…/none`` while no proxy
is configured: nodes then hold no bundle). It only names a generation once the Proxy's status
reflects its spec — before that, what a reconciler applies is the previous generation's status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

APPLIED = "proxyfleet.io/applied"


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
