"""The embedded lab as an evidence source: what each node's clients recorded of their requests,
every origin's access log and the egress firewall's refusals — and what no real host shows: the
services' process environments, each reboot's exact edges, the Root stores' removal history, the
API server's record of evictions (``Evidence.hosts``, ``budget_bypasses``).

A probe's route is judged from the node's and the origins' side only, for any proxy (``routing``):
each probe carries an id of its own in its image tag or URL query (``simulators.origins.probes``),
so the origin's log ties every request to one probe. A proxy's own log (the lab's mitmdump's flow
log, a vendor's access log) only adds what it says to the text."""

from __future__ import annotations

import asyncio
import datetime as dt

from cryptography import x509

from proxyfleet.core.looplag import LagLog
from proxyfleet.harness.conformance.evidence import (
    Evidence,
    HostRecord,
    OutageRecord,
    ProbedDestination,
    Step,
)
from proxyfleet.harness.conformance.expectations import Route
from proxyfleet.harness.conformance.labhosts import LabHost
from proxyfleet.harness.conformance.probe import PullResult
from proxyfleet.harness.conformance.routing import ProbeEvidence
from proxyfleet.harness.lab import Lab
from proxyfleet.harness.lab.accesslogs import describe_flows
from proxyfleet.harness.lab.vendor import VendorProxy
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTERNET_REGISTRY, INTRANET_REGISTRY
from proxyfleet.simulators.origins.probes import new_probe_id, probe_in, tagged_image, tagged_url
from proxyfleet.simulators.proxy.runner import ProxyServer

INTERNET_IMAGE = f"{INTERNET_REGISTRY}/openshift/windows-test:latest"
INTRANET_IMAGE = f"{INTRANET_REGISTRY}/corp/agent:1.0"
HTTP_URL = f"http://{INTERNET_HTTP_SITE}/"  # plain HTTP: the route HTTP_PROXY decides
# The destinations of the lab's traffic checks.
LAB_DESTINATIONS = (ProbedDestination("pull-internet", INTERNET_IMAGE, image=True, internet=True),
                    ProbedDestination("pull-intranet", INTRANET_IMAGE, image=True, internet=False),
                    ProbedDestination("fetch-http", HTTP_URL, image=False, internet=True))


class LabEvidence:
    """Reads the lab's logs and records: ``positions()`` as a step begins, ``marks()`` before its
    pulls, ``read()`` after them."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        plan = lab.control_plane.plan
        self.api_hosts: tuple[str, ...] = (plan.api_internal_host, plan.api_host)
        # the lab's own and a customer's (repro --destination), each judged on its client's route
        self._destinations = [*LAB_DESTINATIONS, *(
            ProbedDestination("destinations", d.text, image=d.image is not None, internet=d.kind == "internet")
            for d in lab.settings.destinations)]
        self._hosts = tuple(dict.fromkeys(d.name for d in self._destinations))
        # Linux nodes' units' environments at the next boot, as ``settle`` read them last
        self._boot_environments: dict[str, dict[str, dict[str, str] | None]] = {}
        # The issuer on the origins' certificates (the lab's public CA): what a node is shown
        # through a tunnelling proxy; an intercepting one shows its own CA instead.
        self._origin_issuer = x509.load_pem_x509_certificate(
            lab.public_ca.cert_pem.bytes()).subject.rfc4514_string()
        self._by_address: dict[str, LabHost] = {}  # every node of the fleet, either kind (``_nodes``)
        self._indexed: Evidence | None = None
        self._by_origin_source: dict[tuple[str, str], list[int]] = {}
        self._foreign: dict[str, list[str]] = {}

    def destinations(self) -> list[ProbedDestination]:
        return list(self._destinations)

    def probe_target(self, destination: ProbedDestination) -> tuple[str, str | None]:
        """What to pull or fetch for one probe, and its id: the destination with a new id in its tag
        or query, which the origin logs."""
        probe = new_probe_id()
        return (tagged_image(destination.text, probe) if destination.image
                else tagged_url(destination.text, probe)), probe

    def _proxies(self) -> list[ProxyServer | VendorProxy]:
        return [p for p in (self.lab.proxy, self.lab.proxy2) if p is not None]

    def _nodes(self) -> list[LabHost]:
        """Every node of the fleet as it is now (nodes join and leave), either kind."""
        every = self.lab.fleet.every_node
        if len(every) != len(self._by_address) or any(n.address not in self._by_address for n in every):
            self._by_address = {n.address: LabHost.of(n) for n in every}
        return list(self._by_address.values())

    def positions(self) -> dict[str, int]:
        found = {"violations": len(self.lab.origins.violations())}
        for node in self._nodes():
            found[f"boots:{node.address}"] = len(node.boots)
            found[f"outages:{node.address}"] = len(node.outages)
            found[f"removals:{node.address}"] = len(node.root_removals)
            found[f"kubelet:{node.address}"] = node.egress.position  # (the step's own records follow)
        return found

    def _host(self, address: str) -> LabHost | None:
        """The node at ``address`` (the fleet read again if it joined since)."""
        if address not in self._by_address:
            self._nodes()
        return self._by_address.get(address)

    def activity(self, address: str) -> int | None:
        """Commands run on the node (the probe's own included), boots and service starts."""
        host = self._host(address)
        if host is None:
            raise KeyError(f"no lab node at {address}")
        return host.activity()

    def listening(self) -> set[str] | None:
        return {n.address for n in self._nodes() if n.listening}

    def anyone_down(self, excluded: set[str]) -> bool:
        return any(not n.listening for n in self._nodes() if n.address not in excluded)

    def down_note(self, address: str) -> str:
        host = self._host(address)
        return host.down_note() if host is not None else ""

    def lab_fault(self, address: str) -> str:
        host = self._host(address)
        return host.lab_fault() if host is not None else ""

    async def settle(self) -> None:
        """Wait until a vendor proxy has logged the connections so far (Squid writes a tunnel's
        line when it closes); the lab's own proxy logs as it goes. Then read what each Linux
        node's units' files give them at the next boot, for ``read``: file reads, done off the
        event loop (1.2 s of them at 1,000 nodes, which would stall the lab's kubelets)."""
        vendor = self.lab.vendor_proxy
        if vendor is not None and vendor.running:
            await vendor.settle()
        linux = [n for n in self._nodes() if n.kind == "linux"]
        self._boot_environments = await asyncio.to_thread(lambda: {n.address: n.boot_environments() for n in linux})

    def marks(self) -> dict[str, int]:
        marks = {f"proxy:{id(p)}": len(p.flows()) for p in self._proxies()}
        for host in self._hosts:
            marks[f"origin:{host}"] = len(self.lab.origins.access_log(host))
        for node in self._nodes():
            marks[f"egress:{node.address}"] = node.egress.position
        return marks

    def read(self, step: Step, marks: dict[str, int]) -> Evidence:
        evidence = Evidence()
        for proxy in self._proxies():  # enrichment only: what each proxy's own log says
            for flow in proxy.flows()[marks.get(f"proxy:{id(proxy)}", 0):]:
                evidence.pull_flows.setdefault(str(flow["client"]), []).append((proxy, flow))
        for host in self._hosts:
            seen = evidence.origin_sources.setdefault(host, {})
            for record in self.lab.origins.access_log(host)[marks[f"origin:{host}"]:]:
                seen[record.source] = seen.get(record.source, 0) + 1
                probe = probe_in(record.path)
                if probe is not None:
                    evidence.probe_sources.setdefault(probe, []).append(record.source)
        for violation in self.lab.origins.violations()[step.positions.get("violations", 0):]:
            evidence.violations.setdefault(violation.source, []).append(violation.origin)
            evidence.refusals.append((violation.origin, violation.source, violation.source_port))
        evidence.kubelet_via_proxy = {}
        for node in self._nodes():
            records = node.egress.since(marks.get(f"egress:{node.address}", 0))
            evidence.egress[node.address] = records
            evidence.kubelet_via_proxy[node.address] = sum(  # the step's records, not the node's whole log
                1 for r in node.egress.since(step.positions.get(f"kubelet:{node.address}", 0))
                if r.client == "kubelet" and r.time >= step.started)
        cordons = self.lab.control_plane.cordons
        settled, self._boot_environments = self._boot_environments, {}
        evidence.hosts = {n.address: self._host_record(n, step.positions, cordons.changes(n.name),
                                                       settled.get(n.address))
                          for n in self._nodes()}
        routes = {s.name: (f"{s.scheme}://{s.hosts[0]}/", "go") for s in self.lab.origins.servers}
        for d in self.lab.settings.destinations:  # a customer's: its own URL, its own client
            routes[d.origin_name] = (d.route_url, d.client)
        evidence.origin_routes = routes
        evidence.budget_bypasses = {}
        for disruption in self.lab.control_plane.server.disruptions.since(step.started):
            if disruption.outcome == "bypassed":
                evidence.budget_bypasses.setdefault(disruption.node, []).append(
                    f"{disruption.pod}: {disruption.detail}")
        evidence.budget = self.lab.max_unavailable
        return evidence

    @staticmethod
    def _host_record(node: LabHost, positions: dict[str, int], cordon_changes: tuple[tuple[dt.datetime, bool], ...],
                     boot_environments: dict[str, dict[str, str] | None] | None = None) -> HostRecord:
        """``boot_environments`` as ``settle`` read them (None: read now, as a node that joined since)."""
        address = node.address
        removed = node.root_removals
        return HostRecord(
            service_environments=node.service_environments(),
            boot_environments=node.boot_environments() if boot_environments is None else boot_environments,
            boots=len(node.boots) - positions.get(f"boots:{address}", 0),
            outages=tuple(OutageRecord(o.down_at, o.up_at, o.at_down, o.at_up, o.pods_at_down, o.requested_at)
                          for o in node.outages[positions.get(f"outages:{address}", 0):]),
            root_removed=frozenset(removed[positions.get(f"removals:{address}", len(removed)):]),
            commands=node.commands, listening=node.listening, cordon_changes=cordon_changes)

    def traffic(self, address: str, destination: ProbedDestination, route: Route, result: PullResult,
                evidence: Evidence, probe: str | None = None) -> ProbeEvidence:
        """What the node's client recorded of the probe (the invocation whose request carried its id),
        where the destination's origin saw that id come from, the firewall's refusals of the probe's
        direct connections (by source port) and of anyone but a node at that origin, and, for the
        text only, what the named proxy's own log says."""
        host = destination.name
        records = evidence.egress.get(address, [])
        named = next((r for r in records if probe is not None and probe in r.url), None)
        requests = tuple(r for r in records if named is not None and r.client == named.client
                         and r.session == named.session)
        ports = {r.local_port for r in requests if not r.through_proxy and r.local_port is not None}
        origin = self._origin_name(host) or ""
        refusals, foreign_by_origin = self._refusals(evidence)
        refused = sum(1 for port in refusals.get((origin, address), []) if port in ports)
        foreign = tuple(foreign_by_origin.get(origin, []))
        proxy = self.lab.proxy_server(route.proxy) if route.proxy is not None else None
        logged = [f for p, f in evidence.pull_flows.get(address, []) if p is proxy and f.get("host") == host]
        return ProbeEvidence(
            ok=result.ok, output=result.output, node=address, requests=requests,
            arrived_from=tuple(dict.fromkeys(evidence.probe_sources.get(probe or "", []))),
            refused=refused, foreign_refusals=foreign, origin_issuer=self._origin_issuer,
            egress=self._egress_address(), firewalled=self._firewalled(host),
            proxy_down=proxy is not None and not proxy.running,
            proxy_logged=describe_flows(logged) if logged else "")

    def _refusals(self, evidence: Evidence) -> tuple[dict[tuple[str, str], list[int]], dict[str, list[str]]]:
        """The step's firewall refusals: the source ports by (origin, source), and by origin the
        sources that are no node (a proxy leaving from the wrong address) — indexed once per read,
        not scanned per node and destination (a thousand nodes refused before a proxy is set)."""
        if self._indexed is not evidence:
            nodes = {n.address for n in self._nodes()}
            self._by_origin_source, self._foreign = {}, {}
            for origin, source, port in evidence.refusals:
                self._by_origin_source.setdefault((origin, source), []).append(port)
                if source not in nodes:
                    self._foreign.setdefault(origin, []).append(source)
            self._indexed = evidence
        return self._by_origin_source, self._foreign

    def _origin_name(self, host: str) -> str | None:
        try:
            return self.lab.origins.server(host).name
        except KeyError:
            return None

    def _egress_address(self) -> str:
        proxy = self.lab.proxy
        return proxy.settings.egress_address or "" if proxy is not None else ""

    def _firewalled(self, host: str) -> bool:
        """Whether the egress firewall refuses a node's direct connection to ``host``."""
        try:
            return self.lab.egress_firewall and self.lab.origins.server(host).kind == "internet"
        except KeyError:
            return False

    async def lags(self, since: float) -> dict[str, dict[str, float]]:
        """The lab's mitmdumps' own loops (a vendor's proxy is not the lab's to measure), and an
        external reconciler's where it logs them (``proxyfleet reconcile`` does; shown, never
        counted for it: a reconciler's own slowness is not the lab's)."""
        found = {}
        for name, proxy in (("proxy", self.lab.proxy), ("proxy2", self.lab.proxy2)):
            if isinstance(proxy, ProxyServer):
                measured = await proxy.lag(since)
                if measured:
                    found[f"mitmdump ({name})"] = measured
        external = self.lab.external_reconciler
        if external is not None:
            record = await asyncio.to_thread(LagLog.read, external.lag_path)
            if record is not None:
                found["reconciler (external)"] = {"worst_s": round(record.worst(since), 3),
                                                  "stalled_s": round(record.stalled(since), 3)}
        return found

    def readable_logs(self) -> list[tuple[str, str]]:
        log = self.lab.state_dir / "reconciler.log"
        if not log.exists():
            return []
        return [("the external reconciler's output (reconciler.log)", log.read_text(errors="replace"))]


