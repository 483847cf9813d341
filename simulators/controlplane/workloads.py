"""The lab's workloads and the controllers that keep them: kube-controller-manager's ReplicaSet,
DaemonSet, pod garbage-collection and disruption controllers, and the scheduler — enough that a
drain has something real to move: pods bound to each Windows node, replacements scheduled
elsewhere, and a PodDisruptionBudget the Eviction API enforces.

Level-triggered like the other in-process controllers: any relevant change wakes one pass that
recomputes everything and writes only what differs. The kubelet (``simulators/kubelet``)
reports pods running; these controllers never do.

Pods are deleted gracefully (``termination``): an evicted pod stays bound and Terminating until its
kubelet has stopped it, and the ReplicaSet replaces it meanwhile.

Not modelled: affinity (``nodeSelector`` is), taints beyond cordon, resources, priorities, preemption, rolling updates.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
from typing import Any

from proxyfleet.simulators.controlplane.disruption import compute_budgets, controller_of
from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.resources import (
    DAEMONSETS,
    NODES,
    PDBS,
    PODS,
    REPLICASETS,
    ResourceType,
    resource,
)
from proxyfleet.simulators.controlplane.store import Store, now_rfc3339
from proxyfleet.simulators.controlplane.termination import terminating
from proxyfleet.simulators.controlplane.watching import WatchingController

WORKLOAD_NAMESPACE = "lab-workloads"
SERVICE_NAME = "web"  # ReplicaSets spread one pod per node, each guarded by a budget of one
# The most pods one service has. A fleet hosts many services, each with its own budget, so drains
# of nodes running different services proceed side by side; one 999-pod service behind a budget of
# one would make every 1,000-node rollout ~30 minutes of one-at-a-time evictions, a shape no
# production fleet of that size runs. Labs of up to 26 nodes have the one service they always had.
SERVICE_PODS = 25
GENERATE_NAME_ATTEMPTS = 8  # kube-apiserver's tries at a free generated name
AGENT_NAME = "node-agent"  # a DaemonSet: drains leave its pods (kubectl drain --ignore-daemonsets)
WINDOWS_IMAGE = "mcr.microsoft.com/windows/servercore:ltsc2022"
NAMESPACES = resource("", "namespaces")


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _schedulable(node: dict[str, Any]) -> bool:
    return _ready(node) and not (node.get("spec") or {}).get("unschedulable")


def _template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"nodeSelector": {"kubernetes.io/os": "windows"},
                     "containers": [{"name": app, "image": WINDOWS_IMAGE}],
                     "terminationGracePeriodSeconds": 30}}


def service_sizes(replicas: int) -> list[int]:
    """How ``replicas`` pods are split into services: as few as hold at most ``SERVICE_PODS`` each,
    as even as can be (the first ones one larger)."""
    count = max(1, -(-replicas // SERVICE_PODS))
    return [replicas // count + (1 if i < replicas % count else 0) for i in range(count)]


def service_names(replicas: int) -> list[str]:
    """Each service's name: ``web`` for a lab with one, ``web-1`` … ``web-N`` with more."""
    count = len(service_sizes(replicas))
    return [SERVICE_NAME] if count == 1 else [f"{SERVICE_NAME}-{i}" for i in range(1, count + 1)]


def lab_workloads(replicas: int) -> list[tuple[ResourceType, dict[str, Any]]]:
    """The objects a lab starts with: a namespace; ``replicas`` pods (one per node when it equals
    the node count) in ReplicaSets of at most ``SERVICE_PODS``, each behind a budget allowing one of
    its pods down; and a node agent."""
    metadata = {"namespace": WORKLOAD_NAMESPACE}
    objects: list[tuple[ResourceType, dict[str, Any]]] = [
        (NAMESPACES, {"metadata": {"name": WORKLOAD_NAMESPACE}, "spec": {"finalizers": ["kubernetes"]},
                      "status": {"phase": "Active"}})]
    for name, size in zip(service_names(replicas), service_sizes(replicas), strict=True):
        objects += [
            (REPLICASETS, {"metadata": {"name": name, **metadata},
                           "spec": {"replicas": size, "selector": {"matchLabels": {"app": name}},
                                    "template": _template(name)}}),
            (PDBS, {"metadata": {"name": name, **metadata},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}}})]
    objects.append((DAEMONSETS, {"metadata": {"name": AGENT_NAME, **metadata},
                                 "spec": {"selector": {"matchLabels": {"app": AGENT_NAME}},
                                          "template": _template(AGENT_NAME)}}))
    return objects


def evictable(pod: dict[str, Any]) -> bool:
    """Whether a drain must move this pod: not a DaemonSet's, not a mirror pod, not finished."""
    owner = controller_of(pod)
    if owner is not None and owner.get("kind") == "DaemonSet":
        return False
    if "kubernetes.io/config.mirror" in ((pod.get("metadata") or {}).get("annotations") or {}):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class WorkloadControllers(WatchingController):
    """ReplicaSet, DaemonSet, pod GC and disruption controllers, and the scheduler."""

    name = "workload controllers"
    watches = (PODS, NODES, REPLICASETS, DAEMONSETS, PDBS)
    debounce = 0.02  # one pass for a burst of related writes
    # At most a twentieth of the CPU: a pass takes ~0.04 ms at 10 nodes and ~0.4 ms at 100, which
    # keep the 20 ms debounce; ~4.6 ms at 1,000 nodes (2,000 pods), which runs ~11 times a second
    # instead of ~40. A replacement pod or a budget's status comes that much later (< 0.1 s after an
    # ordinary pass, at most 0.5 s after a heavy one), well within what the real controllers' queues take.
    pacing = 19.0

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._node_shape: dict[str, tuple[bool, bool]] = {}
        self.passes = 0

    def wants(self, event: dict[str, Any]) -> bool:
        obj = event["object"]
        if obj.get("kind") != "Node":
            return True
        # Heartbeats change nothing here: only a node coming, going, or changing readiness or
        # schedulability does.
        name = obj["metadata"]["name"]
        if event["type"] == "DELETED":
            self._node_shape.pop(name, None)
            return True
        shape = (_ready(obj), bool((obj.get("spec") or {}).get("unschedulable")))
        if self._node_shape.get(name) == shape:
            return False
        self._node_shape[name] = shape
        return True

    async def reconcile_pass(self) -> None:
        self.reconcile()

    def reconcile(self) -> None:
        """One level-triggered pass over every workload."""
        self.passes += 1
        # Stored objects, not copies (read only here; what is written is copied first).
        nodes = {n["metadata"]["name"]: n for n in self.store.scan(NODES)}
        pods = self.store.scan(PODS)
        live = []
        for pod in pods:
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound and bound not in nodes:
                self._delete(pod)  # pod GC: its node is gone
            else:
                live.append(pod)
        # One look at each pod: its owner's active pods (a Terminating one is replaced at once,
        # the ReplicaSet controller's FilterActivePods, while it is still bound to its node) and
        # the nodes each owner covers (the DaemonSet controller's, Terminating ones too).
        active: dict[str, int] = {}
        covered: dict[str, set[str | None]] = {}
        for pod in live:
            uid = (controller_of(pod) or {}).get("uid", "")
            if not terminating(pod):
                active[uid] = active.get(uid, 0) + 1
            covered.setdefault(uid, set()).add((pod.get("spec") or {}).get("nodeName"))
        for replica_set in self.store.scan(REPLICASETS):
            wanted = int((replica_set.get("spec") or {}).get("replicas", 1))
            missing = wanted - active.get(replica_set["metadata"]["uid"], 0)
            live.extend(self._create(replica_set, None) for _ in range(max(0, missing)))
        for daemon_set in self.store.scan(DAEMONSETS):
            has = covered.get(daemon_set["metadata"]["uid"], set())
            live.extend(self._create(daemon_set, name) for name in sorted(nodes) if name not in has)
        self._schedule(live, nodes)
        self._budgets()

    def _create(self, owner: dict[str, Any], node: str | None) -> dict[str, Any]:
        template = (owner.get("spec") or {}).get("template") or {}
        metadata = owner["metadata"]
        spec = dict(template.get("spec") or {})
        if node is not None:
            spec["nodeName"] = node  # the DaemonSet controller binds its pods itself
        pod = {"metadata": {"name": "", "namespace": metadata["namespace"],
                            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                            "ownerReferences": [{"apiVersion": owner.get("apiVersion", "apps/v1"),
                                                 "kind": owner.get("kind"), "name": metadata["name"],
                                                 "uid": metadata["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": spec, "status": {"phase": "Pending"}}
        # A generated name: a random suffix, drawn again when taken, as kube-apiserver retries
        # generateName (RetryGenerateName, GA in 1.32): 2,000 pods of a 1,000-node lab collide now and then.
        for _ in range(GENERATE_NAME_ATTEMPTS - 1):
            pod["metadata"]["name"] = f"{metadata['name']}-{secrets.token_hex(3)}"
            try:
                return self.store.create(PODS, pod)
            except APIError as exc:
                if exc.reason != "AlreadyExists":
                    raise
        pod["metadata"]["name"] = f"{metadata['name']}-{secrets.token_hex(3)}"
        return self.store.create(PODS, pod)

    def _delete(self, pod: dict[str, Any]) -> None:
        with contextlib.suppress(APIError):
            self.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])

    def _schedule(self, pods: list[dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> None:
        """Bind each pending pod to a schedulable node its ``nodeSelector`` matches, the one with
        the fewest pods of its owner, then the fewest pods (spreading, as the default scheduler's
        scoring would)."""
        if all((pod.get("spec") or {}).get("nodeName") for pod in pods):
            return  # nothing to bind: most passes (a pass follows every pod's status post)
        candidates = sorted(name for name, node in nodes.items() if _schedulable(node))
        if not candidates:
            return
        load: dict[str, int] = dict.fromkeys(nodes, 0)
        by_owner: dict[tuple[str, str], int] = {}
        for pod in pods:
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound:
                load[bound] = load.get(bound, 0) + 1
                owner = (controller_of(pod) or {}).get("uid", "")
                by_owner[(owner, bound)] = by_owner.get((owner, bound), 0) + 1
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName"):
                continue
            selector = (pod.get("spec") or {}).get("nodeSelector") or {}
            fitting = [n for n in candidates
                       if all(((nodes[n].get("metadata") or {}).get("labels") or {}).get(k) == v
                              for k, v in selector.items())]
            if not fitting:
                continue  # Pending until a node that fits is schedulable
            owner = (controller_of(pod) or {}).get("uid", "")
            chosen = min(fitting, key=lambda n: (by_owner.get((owner, n), 0), load.get(n, 0), n))
            pod = copy.deepcopy(pod)
            pod["metadata"].pop("resourceVersion", None)
            pod["spec"]["nodeName"] = chosen
            pod["status"] = {**(pod.get("status") or {}), "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()}]}
            with contextlib.suppress(APIError):  # deleted meanwhile: the next pass sees it
                self.store.update(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], pod)
                self.store.update(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], pod,
                                  subresource="status")
            load[chosen] = load.get(chosen, 0) + 1
            by_owner[(owner, chosen)] = by_owner.get((owner, chosen), 0) + 1

    def _budgets(self) -> None:
        """The disruption controller: each budget's status from the pods it selects, as stored now
        (the kubelets may have reported some ready since this pass began)."""
        for pdb, budget in compute_budgets(self.store.scan(PDBS), self.store.scan(PODS), self.store.scan(REPLICASETS)):
            namespace = pdb["metadata"]["namespace"]
            previous = pdb.get("status") or {}
            status = budget.status(pdb["metadata"].get("generation", 1), previous, now_rfc3339())
            same = {k: v for k, v in previous.items() if k != "conditions"} == \
                {k: v for k, v in status.items() if k != "conditions"}
            if not same:
                pdb = {**copy.deepcopy(pdb), "status": status}
                pdb["metadata"].pop("resourceVersion", None)
                with contextlib.suppress(APIError):
                    self.store.update(PDBS, namespace, pdb["metadata"]["name"], pdb, subresource="status")
