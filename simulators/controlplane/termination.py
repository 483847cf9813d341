"""Graceful pod termination as kube-apiserver's pod registry decides it (pure functions).

A DELETE of a pod — directly or through the Eviction API — does not remove a pod that is bound to
a node and still running: it sets ``metadata.deletionTimestamp`` (now + the grace period) and
``metadata.deletionGracePeriodSeconds``, and the pod stays, ``Terminating``, until the node's
kubelet has stopped its containers and deletes it with a grace period of 0. The grace period is the
request's ``gracePeriodSeconds`` (query or DeleteOptions), else the pod's
``spec.terminationGracePeriodSeconds`` (default 30). A pod that is not bound to a node, or has
finished (Succeeded/Failed), or is deleted with a grace period of 0, goes at once. A second DELETE
may only shorten the grace period. ``kubectl drain`` waits for the pods to be gone, not merely
evicted — which is what the judge's ``drained`` check holds a reconciler to.

Not modelled: finalizers, ``propagationPolicy``, the node's own grace-period override.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any

from proxyfleet.simulators.controlplane.errors import APIError

DEFAULT_GRACE = 30


def requested_grace(query: Mapping[str, str], options: Mapping[str, Any] | None) -> int | None:
    """The grace period a DELETE asked for (None: the pod's own); the body wins over the query, as
    in the apiserver (the query is only a fallback for clients that send no body)."""
    value: Any = (options or {}).get("gracePeriodSeconds")
    if value is None:
        value = query.get("gracePeriodSeconds")
    if value is None:
        return None
    try:
        grace = int(value)
    except (TypeError, ValueError):
        raise APIError(400, "BadRequest", f'invalid value "{value}" for gracePeriodSeconds') from None
    if grace < 0:
        raise APIError(400, "BadRequest", f"gracePeriodSeconds must be 0 or more, not {grace}")
    return grace


def grace_period(pod: Mapping[str, Any], requested: int | None) -> int:
    """How long the pod may take to terminate (0: delete it now)."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return 0  # never scheduled: no kubelet to stop anything
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0  # its containers have already stopped
    if requested is not None:
        return requested
    configured = spec.get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE if configured is None else max(int(configured), 0)


def _time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def marked_for_deletion(pod: Mapping[str, Any], grace: int, now: dt.datetime) -> dict[str, Any] | None:
    """The pod as stored once a graceful DELETE is accepted, or None when nothing changes (already
    terminating with a grace period no longer than ``grace``)."""
    metadata = pod.get("metadata") or {}
    current = metadata.get("deletionGracePeriodSeconds")
    if metadata.get("deletionTimestamp") and current is not None and int(current) <= grace:
        return None
    updated = copy.deepcopy(dict(pod))
    updated["metadata"]["deletionTimestamp"] = _time(now + dt.timedelta(seconds=grace))
    updated["metadata"]["deletionGracePeriodSeconds"] = grace
    return updated


def terminating(pod: Mapping[str, Any]) -> bool:
    """Whether a pod is being deleted (``kubectl get pods`` shows it ``Terminating``)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))
