"""After a cluster is put back: wait until its nodes are back too (``--wait-restored``), so the next
job does not meet a cluster still rolling.

Put back means: every Node's cordon is as the snapshot saved it, every Windows instance's Node is
Ready, and the instances hold the restored settings. Which evidence says the last depends on what
the cluster's reconciler publishes:

- one that reports each node's applied revision (``proxyfleet.io/applied``, the reference
  reconciler's contract, what ``proxyfleet rollout status`` reads): every instance claims the
  cluster's current revision, none failed;
- one that does not (the Windows Machine Config Operator): no instance's Node carries WMCO's
  ``windowsmachineconfig.openshift.io/reboot-required`` annotation (set on a change, removed after
  its reboot). That cannot tell a rollout not begun yet from one finished, so this is said in the
  result: the revision itself was not observable.

Pure (``progress``) plus a polling loop with a deadline (``wait_restored``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.contract import APPLIED, OPERATOR_NAMESPACE, STATE_LABEL
from proxyfleet.core.informer import internal_ip
from proxyfleet.core.rollout import Snapshot, assess, read_snapshot

REBOOT_REQUIRED = "windowsmachineconfig.openshift.io/reboot-required"  # WMCO's, on a Node owing a reboot


@dataclass
class Progress:
    """Where putting the cluster back stands: ``still`` is what is not back yet, one line each."""

    still: list[str] = field(default_factory=list)
    claims: bool = True  # whether the reconciler reports applied revisions (else: WMCO's annotation)

    @property
    def done(self) -> bool:
        return not self.still

    def note(self) -> str:
        if self.claims:
            return "every instance holds the restored revision and every Node's cordon is as it was"
        return ("every Node's cordon is as it was and no instance owes a reboot (the cluster's reconciler reports "
                "no applied revision, so the revision itself was not observable)")


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def progress(snapshot: Snapshot, saved_cordons: Mapping[str, bool]) -> Progress:
    """Pure: what is not back yet, from one look at the cluster and the cordons a run saved."""
    nodes = {str((n.get("metadata") or {}).get("name")): n for n in snapshot.nodes}
    by_address = {internal_ip(n): n for n in snapshot.nodes}
    instances = [by_address.get(a) for a in sorted(snapshot.instances)]
    claims = any(((n.get("metadata") or {}).get("labels") or {}).get(STATE_LABEL)
                 or ((n.get("metadata") or {}).get("annotations") or {}).get(APPLIED) for n in instances if n)
    result = Progress(claims=claims)
    for name, cordoned in sorted(saved_cordons.items()):
        node = nodes.get(name)
        if node is not None and bool((node.get("spec") or {}).get("unschedulable")) != cordoned:
            result.still.append(f"Node {name} {'uncordoned' if cordoned else 'cordoned'} (it was "
                                f"{'cordoned' if cordoned else 'schedulable'})")
    for address, node in zip(sorted(snapshot.instances), instances, strict=True):
        if node is None:
            result.still.append(f"instance {address}: no Node")
            continue
        name = str((node.get("metadata") or {}).get("name"))
        if not _ready(node):
            result.still.append(f"Node {name} not Ready")
        if not claims and REBOOT_REQUIRED in ((node.get("metadata") or {}).get("annotations") or {}):
            result.still.append(f"Node {name} owes a reboot ({REBOOT_REQUIRED})")
    if claims:
        rollout = assess(snapshot)
        if rollout.revision is None:
            result.still.append(f"the restored settings: waiting for {rollout.waiting_for}")
        result.still += [f"{line} (not yet at revision {rollout.revision})" for line in rollout.pending]
        result.still += [f"{line} (failed)" for line in rollout.failed]
    return result


async def wait_restored(api: client.ApiClient, saved_cordons: Mapping[str, bool], within: float,
                        poll: float = 2.0, namespace: str = OPERATOR_NAMESPACE,
                        show: Callable[[str], None] | None = None) -> Progress:
    """Look until everything is back or ``within`` seconds have passed; the last look's progress
    (``done`` False then, with what is still rolling)."""
    deadline = time.monotonic() + within
    shown = ""
    while True:
        try:
            found = progress(await asyncio.to_thread(read_snapshot, api, namespace), saved_cordons)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            # the put-back just started a rollout: an API server passing through trouble is
            # something to wait out, then to name
            reason = f"{exc.status} {exc.reason}" if isinstance(exc, ApiException) else type(exc).__name__
            found = Progress(still=[f"the API server: {reason}"])
        line = "; ".join(found.still[:3]) + (f" and {len(found.still) - 3} more" if len(found.still) > 3 else "")
        if show is not None and line and line != shown:
            show(f"waiting for the cluster to be back: {line}")
            shown = line
        if found.done or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(poll)
