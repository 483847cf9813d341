"""A node's kubelet, as far as proxies are concerned, on every node kind: while the kubelet service
runs it registers the Node, renews its Lease and reports Ready — over real HTTPS to the API server
through the lab network, deciding proxy-or-direct with client-go's rules on the kubelet's own
process environment and trusting only the cluster CA. The node kind says who the node is
(``KubeletHost``: its name, clock, boot, egress log, and ``NodeIdentity``: its labels and node info).

So a NO_PROXY without the internal API host sends the kubelet into the MITM proxy, its TLS check
fails, the lease goes stale and the node lifecycle controller marks the Node NotReady — as on a
real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from proxyfleet.core.cancelling import wait_until
from proxyfleet.core.certificates import pem_blocks
from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
from proxyfleet.simulators.egress.records import EgressLog, EgressRecord
from proxyfleet.simulators.network import LabNetwork

KUBELET_VERSION = "v1.30.4"
LEASE_NAMESPACE = "kube-node-lease"


@dataclass
class KubeletSettings:
    api_url: str  # what the node's kubeconfig says, e.g. https://api-int.lab.example.com:6443
    # The kubelet's bearer token: one for every node, or one per node name (system:node:<name>).
    token: str | Callable[[str], str]
    ca_pem: bytes
    lease_interval: float = 10.0
    status_interval: float = 10.0  # nodeStatusUpdateFrequency: how often the status is computed and compared
    # nodeStatusReportFrequency: an unchanged status is still posted this often (the kubelet's 5 min).
    # In between only a change is posted: every post is a Node event to every watcher of Nodes,
    # and at 100 nodes posting each status regardless flooded their watches.
    status_report_interval: float = 300.0
    lease_duration: int = 40
    # How long a pod's containers take to stop once it is deleted (its app handling the stop
    # signal), never longer than its grace period; counted in time the lab's loop could run, so a
    # starved machine never makes a pod vanish early.
    container_stop_seconds: float = 1.0


class KubeletError(Exception):
    pass


@dataclass(frozen=True)
class NodeIdentity:
    """What a node's kubelet says of the node: its operating system and the labels it registers."""

    operating_system: str  # "windows", "linux"
    os_image: str
    kernel_version: str
    container_runtime_version: str  # "containerd://1.7.0", "cri-o://1.29.1"
    labels: Mapping[str, str]  # besides kubernetes.io/{os,arch,hostname} and their beta twins


class KubeletHost(Protocol):
    """The node a kubelet runs on, as the kubelet sees it."""

    @property
    def name(self) -> str: ...

    @property
    def egress(self) -> EgressLog: ...

    @property
    def identity(self) -> NodeIdentity: ...

    def now(self) -> dt.datetime: ...

    def boot_id(self) -> str: ...


def same_status(shown: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether the Node's status already says what the kubelet would post: its addresses, node
    info and capacity, and each condition's type, status, reason and message — not the heartbeat
    and transition times (client-go's nodeStatusHasChanged)."""
    def conditions(status: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                      for c in status.get("conditions") or [])
    keys = ("addresses", "nodeInfo", "capacity", "allocatable")
    return all(shown.get(k) == wanted.get(k) for k in keys) and conditions(shown) == conditions(wanted)


@dataclass
class KubeletState:
    """What the lab can read about a simulated kubelet (real Windows offers no such view)."""

    registered: bool = False
    heartbeats: int = 0
    failures: int = 0
    last_error: str | None = None
    errors: list[str] = field(default_factory=list)
    pods_started: int = 0  # pod status reports that set a pod running
    pods_terminated: int = 0  # Terminating pods it deleted once their containers stopped


def _micro_time(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatedKubelet:
    """One node's kubelet: ``start`` it with its process environment when its service starts,
    ``stop`` it when the service stops."""

    def __init__(self, host: KubeletHost, address: str, network: LabNetwork | None,
                 settings: KubeletSettings) -> None:
        self.host = host
        self.address = address
        self.network = network
        self.settings = settings
        self.state = KubeletState()
        self.name = host.name.lower()
        self._task: asyncio.Task[None] | None = None
        self._trust: ssl.SSLContext = trust_context(pem_blocks(settings.ca_pem))
        self._ready_since: dt.datetime | None = None
        self._next_report = 0.0  # when an unchanged status is posted anyway (monotonic)
        self._pods_due = asyncio.Event()
        self._running: dict[str, str] = {}  # pod uid -> the boot its containers were started in
        self._stopping: dict[str, float] = {}  # pod uid -> when its containers were told to stop
        self._next_stop: float | None = None  # when the next stopping pod's containers are done
        token = settings.token
        self._token = token(self.name) if callable(token) else token

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _record(self, record: EgressRecord) -> None:
        """Only the kubelet's requests through a proxy are kept (the judge asks whether there was
        any): its direct heartbeats, every second on every node, would crowd out the probes'."""
        if record.through_proxy:
            self.host.egress.add(record)

    def start(self, environment: Mapping[str, str]) -> None:
        """The service started: a new kubelet process with ``environment`` (as Go's os.Getenv
        reads it: a case-insensitive mapping on Windows)."""
        self.stop()
        self._ready_since = None
        self._next_report = 0.0  # a (re)started kubelet posts its status at once
        self.state.registered = False
        self._task = asyncio.get_running_loop().create_task(self._run(environment), name=f"kubelet {self.name}")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def pods_changed(self) -> None:
        """A pod bound to this node changed: sync pods now. The lab calls this from its watch on
        the API server, standing in for the kubelet's own pod watch (the sync itself is HTTP)."""
        self._pods_due.set()

    async def _run(self, environment: Mapping[str, str]) -> None:
        async with EgressSession(self.network, self.address, self._trust,
                                 user_agent=f"kubelet/{KUBELET_VERSION} ({self.host.identity.operating_system}/amd64)",
                                 client="kubelet", recorder=self._record,
                                 session=self.host.egress.new_session()) as session:
            next_status = 0.0
            next_lease = 0.0
            self._pods_due.set()  # a (re)started kubelet starts the pods bound to it
            while True:
                try:
                    if not self.state.registered:
                        await self._register(session, environment)
                    if time.monotonic() >= next_lease:
                        await self._renew_lease(session, environment)
                        if time.monotonic() >= next_status or self.state.failures:
                            await self._update_status(session, environment)
                            next_status = time.monotonic() + self.settings.status_interval
                        next_lease = time.monotonic() + self.settings.lease_interval  # the kubelet's own period
                        self.state.heartbeats += 1
                    if self._pods_due.is_set() or (self._next_stop is not None
                                                   and time.monotonic() >= self._next_stop):
                        self._pods_due.clear()
                        await self._sync_pods(session, environment)
                    self.state.failures = 0
                    self.state.last_error = None
                except (KubeletError, EgressError) as exc:
                    with contextlib.suppress(Exception):
                        await session.close()  # start over with fresh connections
                    self.state.failures += 1
                    self.state.last_error = str(exc)
                    self.state.errors = [*self.state.errors, str(exc)][-20:]
                    self._ready_since = None
                    self._pods_due.set()
                    next_lease = time.monotonic() + self.settings.lease_interval
                    await asyncio.sleep(self.settings.lease_interval)
                    continue
                wake = next_lease if self._next_stop is None else min(next_lease, self._next_stop)
                await wait_until(self._pods_due, max(0.0, wake - time.monotonic()))

    async def _sync_pods(self, session: EgressSession, environment: Mapping[str, str]) -> None:
        """Report the pods bound to this node running and ready (their containers start at once),
        and end each Terminating one once its containers have stopped."""
        status, listed = await self._call(session, environment, "GET",
                                          f"/api/v1/pods?fieldSelector=spec.nodeName%3D{self.name}")
        if status != 200 or not isinstance(listed, dict):
            raise KubeletError(f"listing pods: {status}")
        boot_id = self.host.boot_id()
        self._next_stop = None
        pods = listed.get("items") or []
        for uid in set(self._stopping) - {(p.get("metadata") or {}).get("uid") for p in pods}:
            del self._stopping[uid]  # gone
        for pod in pods:
            metadata, current = pod.get("metadata") or {}, pod.get("status") or {}
            if metadata.get("deletionTimestamp"):
                await self._terminate(session, environment, pod, boot_id)
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in current.get("conditions") or [])
            if current.get("phase") == "Running" and ready:
                self._running[str(metadata.get("uid"))] = boot_id  # (re)started with this boot
                continue
            status, body = await self._call(
                session, environment, "PATCH",
                f"/api/v1/namespaces/{metadata.get('namespace')}/pods/{metadata.get('name')}/status",
                {"status": self._pod_status(pod)}, content_type="application/merge-patch+json")
            if status not in (200, 404):  # 404: deleted meanwhile
                raise KubeletError(f"updating pod status: {status} {body}")
            self._running[str(metadata.get("uid"))] = boot_id
            self.state.pods_started += 1

    async def _terminate(self, session: EgressSession, environment: Mapping[str, str], pod: dict[str, Any],
                         boot_id: str) -> None:
        """A Terminating pod: stop its containers (``container_stop_seconds`` of time the lab could
        run, at most its grace period), then delete it with a grace period of 0, as the kubelet's
        status manager does. Containers that did not survive a reboot have nothing left to stop."""
        metadata = pod.get("metadata") or {}
        uid = str(metadata.get("uid"))
        if self._running.get(uid) == boot_id:
            now = time.monotonic()
            told = self._stopping.setdefault(uid, now)
            grace = float(metadata.get("deletionGracePeriodSeconds") or 0)
            ran = now - told - process_monitor().stalled(told)
            remaining = min(self.settings.container_stop_seconds, grace) - ran
            if remaining > 0:
                due = now + remaining
                self._next_stop = due if self._next_stop is None else min(self._next_stop, due)
                return
        path = f"/api/v1/namespaces/{metadata.get('namespace')}/pods/{metadata.get('name')}"
        status, body = await self._call(session, environment, "DELETE", path, {
            "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        if status not in (200, 404, 409):  # 404: gone already; 409: a new pod by that name
            raise KubeletError(f"deleting a terminated pod: {status} {body}")
        self._running.pop(uid, None)
        self._stopping.pop(uid, None)
        self.state.pods_terminated += 1

    def _pod_status(self, pod: dict[str, Any]) -> dict[str, Any]:
        now = _seconds(self.host.now())
        conditions = [{"type": kind, "status": "True", "lastTransitionTime": now}
                      for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
        uid = (pod.get("metadata") or {}).get("uid", "")
        containers = [{"name": c.get("name"), "image": c.get("image"), "ready": True, "started": True,
                       "imageID": f"{c.get('image')}@sha256:{hashlib.sha256(str(c.get('image')).encode()).hexdigest()}",
                       "containerID": "containerd://" + hashlib.sha256(f"{uid}/{c.get('name')}".encode()).hexdigest(),
                       "restartCount": 0, "state": {"running": {"startedAt": now}}}
                      for c in (pod.get("spec") or {}).get("containers") or []]
        return {"phase": "Running", "conditions": conditions, "hostIP": self.address, "podIP": self.address,
                "startTime": now, "containerStatuses": containers}

    async def _call(self, session: EgressSession, environment: Mapping[str, str], method: str,
                    path: str, body: Any = None, content_type: str = "application/json"
                    ) -> tuple[int, Any]:
        url = self.settings.api_url.rstrip("/") + path
        decision = CLIENTS["client-go"].decide(environment, url)
        if decision.decision == "error":
            raise KubeletError(decision.reason)
        headers = [("Authorization", f"Bearer {self._token}"), ("Accept", "application/json")]
        payload = b""
        if body is not None:
            payload = json.dumps(body).encode()
            headers.append(("Content-Type", content_type))
        response = await session.request(method, url, proxy=decision.proxy, headers=headers, body=payload)
        try:
            parsed = json.loads(response.body) if response.body else None
        except ValueError:
            parsed = None
        if response.status >= 500 or response.status in (401, 403):
            raise KubeletError(f"{method} {path}: {response.status} {response.reason}")
        return response.status, parsed

    def _node(self) -> dict[str, Any]:
        system = self.host.identity.operating_system
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "labels": {
                "kubernetes.io/os": system, "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": system, "beta.kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": self.name, **self.host.identity.labels}},
            "spec": {},
            "status": self._status(),
        }

    def _status(self) -> dict[str, Any]:
        now = self.host.now()
        if self._ready_since is None:
            self._ready_since = now
        identity = self.host.identity
        return {
            "addresses": [{"type": "InternalIP", "address": self.address},
                          {"type": "Hostname", "address": self.name}],
            "nodeInfo": {"machineID": self.name, "systemUUID": self.name,
                         "bootID": self.host.boot_id(),
                         "kernelVersion": identity.kernel_version,
                         "osImage": identity.os_image,
                         "containerRuntimeVersion": identity.container_runtime_version,
                         "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                         "operatingSystem": identity.operating_system, "architecture": "amd64"},
            "capacity": {"cpu": "2", "memory": "8388608Ki", "pods": "250"},
            "allocatable": {"cpu": "2", "memory": "8286208Ki", "pods": "250"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastHeartbeatTime": _seconds(now),
                            "lastTransitionTime": _seconds(self._ready_since)}],
        }

    async def _register(self, session: EgressSession, environment: Mapping[str, str]) -> None:
        status, _ = await self._call(session, environment, "GET", f"/api/v1/nodes/{self.name}")
        if status == 404:
            node = self._node()
            status, body = await self._call(session, environment, "POST", "/api/v1/nodes", node)
            if status not in (200, 201, 409):
                raise KubeletError(f"registering node: {status} {body}")
        self.state.registered = True

    async def _renew_lease(self, session: EgressSession, environment: Mapping[str, str]) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{self.name}"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE},
                 "spec": {"holderIdentity": self.name,
                          "leaseDurationSeconds": self.settings.lease_duration,
                          "renewTime": _micro_time(self.host.now())}}
        status, body = await self._call(session, environment, "PUT", path, lease)
        if status == 404:
            status, body = await self._call(session, environment, "POST",
                                            f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases",
                                            lease)
        if status not in (200, 201):
            raise KubeletError(f"renewing lease: {status} {body}")

    async def _update_status(self, session: EgressSession, environment: Mapping[str, str]) -> None:
        """Post the Node's status when it differs from what the Node shows (say, the lifecycle
        controller marked it Unknown), after a failure, or once per report interval — as the
        kubelet's tryUpdateNodeStatus does (heartbeat times alone are not a change)."""
        wanted = self._status()
        if not self.state.failures and time.monotonic() < self._next_report:
            status, current = await self._call(session, environment, "GET", f"/api/v1/nodes/{self.name}")
            if status == 404:
                self.state.registered = False
                raise KubeletError(f"node {self.name} not found; registering again")
            if status == 200 and isinstance(current, dict) and same_status(current.get("status") or {}, wanted):
                return
        await self._post_status(session, environment, wanted)
        self._next_report = time.monotonic() + self.settings.status_report_interval

    async def _post_status(self, session: EgressSession, environment: Mapping[str, str],
                           wanted: dict[str, Any]) -> None:
        status, body = await self._call(session, environment, "PATCH", f"/api/v1/nodes/{self.name}/status",
                                        {"status": wanted}, content_type="application/merge-patch+json")
        if status == 404:
            self.state.registered = False
            raise KubeletError(f"node {self.name} not found; registering again")
        if status != 200:
            raise KubeletError(f"updating node status: {status} {body}")
