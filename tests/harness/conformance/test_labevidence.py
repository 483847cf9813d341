"""Lab evidence for one step, from a real lab: each probe's route as the node's clients recorded it
and the origins saw its id, firewall refusals matched to the node's connections — from real
traffic the node's crictl and curl.exe send — and the records only a simulator has: boots and
outage edges since the step began, Root store removals, the services' process environments."""

from __future__ import annotations

import dataclasses
import datetime as dt

from proxyfleet.core.contract import EGRESS_SERVICES
from proxyfleet.core.nodessh import encoded_command
from proxyfleet.harness.conformance import checks, routing
from proxyfleet.harness.conformance.evidence import Step
from proxyfleet.harness.conformance.expectations import Expected
from proxyfleet.harness.conformance.labevidence import LAB_DESTINATIONS, LabEvidence
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.harness.conformance.routing import ProbeEvidence
from proxyfleet.harness.conformance.trafficcommands import native_call_script
from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.egress.records import EgressRecord
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTERNET_REGISTRY, INTRANET_REGISTRY
from tests.support import run_powershell, wait_until

DIRECT = Expected({"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}, {}, {})


async def test_a_probes_route_is_read_from_the_nodes_and_the_origins_side() -> None:
    async with Lab(LabSettings(nodes=1)) as lab:
        assert lab.proxy is not None and lab.fleet.client_key is not None
        address = lab.fleet.nodes[0].address
        evidence = LabEvidence(lab)
        # the kubelet's request through a proxy before the step is not the step's (one after it is)
        egress_log = lab.fleet.nodes[0].machine.egress
        kubelet = EgressRecord(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1), address, "kubelet", 0, "PUT", "https://api/lease", "connect")
        egress_log.add(kubelet)
        step = Step("a step", dt.datetime.now(dt.UTC), members=[address], deconfigured=[], before={},
                    positions=evidence.positions())
        egress_log.add(dataclasses.replace(kubelet, time=dt.datetime.now(dt.UTC)))
        marks = evidence.marks()
        pull, intranet, fetch = LAB_DESTINATIONS
        probe = NodeProbe(lab.fleet.client_key, lab.fleet.port)
        try:
            # no proxy on the node yet: the intranet registry directly, the internet one refused
            intranet_text, intranet_id = evidence.probe_target(intranet)
            pull_text, pull_id = evidence.probe_target(pull)
            assert intranet_id != pull_id and pull_id is not None and pull_id in pull_text
            assert (await probe.pull(address, intranet_text)).ok
            refused = await probe.pull(address, pull_text)
            assert not refused.ok
            # through the lab's proxy, named on curl's command line
            fetch_text, fetch_id = evidence.probe_target(fetch)
            command = encoded_command(native_call_script("curl.exe", ["-sS", "-f", "-x", lab.proxy_url], fetch_text))
            via_proxy = await probe._traffic(address, command, 30)
            assert via_proxy.ok, via_proxy.output
        finally:
            await probe.close()
        found = evidence.read(step, marks)
        egress = lab.proxy.settings.egress_address
        # the origins saw each probe's id: the intranet one from the node, the fetch from the proxy
        assert found.probe_sources[intranet_id or ""] == [address]  # its HEAD by the tag (then by digest)
        assert found.probe_sources[fetch_id or ""] == [egress]
        assert pull_id not in found.probe_sources  # refused before a request arrived
        assert found.violations == {address: ["internet-registry"]}
        assert found.kubelet_via_proxy == {address: 1}
        # the node's own records of the three
        records = found.egress[address]
        assert {r.client for r in records} == {"containerd", "curl"}
        through = [r for r in records if r.through_proxy]
        assert [(r.mode, r.client) for r in through] == [("absolute-form", "curl")]
        # The pull's evidence, judged through the seam: refused at the firewall (matched by the
        # connection's source port), as a node without a proxy must be; the same evidence for a
        # node the cluster sends through the proxy fails, saying it went direct.
        seen = evidence.traffic(address, pull, DIRECT.route(pull.route_url), refused, found, pull_id)
        assert isinstance(seen, ProbeEvidence) and seen.firewalled and seen.refused >= 1 and not seen.arrived_from
        assert routing.judge(pull.text, "pull", DIRECT.route(pull.route_url), seen).ok
        proxied = Expected({"HTTP_PROXY": lab.proxy_url, "HTTPS_PROXY": lab.proxy_url, "NO_PROXY": None}, {}, {})
        wrong = routing.judge(pull.text, "pull", proxied.route(pull.route_url), seen)
        assert not wrong.ok and "went direct" in wrong.observed
        # the fetch through the proxy: carried by it, as the node and the origin saw it
        carried = evidence.traffic(address, fetch, proxied.route(fetch.route_url, "curl"), via_proxy, found, fetch_id)
        assert isinstance(carried, ProbeEvidence)
        verdict = routing.judge(fetch.text, "fetch", proxied.route(fetch.route_url, "curl"), carried)
        assert verdict.ok and verdict.observed == "through the proxy (plain HTTP, absolute-form request)"
        assert carried.proxy_logged.startswith("the proxy logged GET")  # the lab's mitmdump's own log, for a failure
        # ... and the firewall check names the bypass only where the cluster names a proxy
        assert found.origin_routes is not None
        assert checks.firewall_bypasses(found.violations[address], found.origin_routes, DIRECT.route) == []
        assert checks.firewall_bypasses(found.violations[address], found.origin_routes,
                                        proxied.route) == ["internet-registry"]


async def test_host_records_hold_what_happened_since_the_step_began() -> None:
    async with Lab(LabSettings(nodes=2, reboot_duration=0.1, shutdown_delay=0.05,
                               service_stage_seconds=0.05)) as lab:
        rebooted, other = lab.fleet.nodes
        evidence = LabEvidence(lab)
        thumbprint = next(iter(rebooted.machine.stores.machine_root.thumbprints()))
        await run_powershell(lab.fleet, rebooted, f"Remove-Item Cert:\\LocalMachine\\Root\\{thumbprint}")
        # what happened before the step is not the step's
        step = Step("a step", dt.datetime.now(dt.UTC), members=[rebooted.address, other.address], deconfigured=[],
                    before={}, positions=evidence.positions())
        activity = evidence.activity(rebooted.address)
        first_boot = rebooted.boots[-1].boot_id
        await run_powershell(lab.fleet, rebooted, "Restart-Computer -Force")
        await wait_until(lambda: rebooted.boots[-1].boot_id != first_boot and rebooted.is_listening,
                         what="the node to come back")
        await wait_until(lambda: all(rebooted.process_environment(s) is not None for s in EGRESS_SERVICES),
                         what="its services to start")
        assert (evidence.activity(rebooted.address) or 0) > (activity or 0)
        await run_powershell(lab.fleet, other, f"Remove-Item Cert:\\LocalMachine\\Root\\{thumbprint}")
        found = evidence.read(step, evidence.marks())
        assert found.hosts is not None
        again, quiet = found.hosts[rebooted.address], found.hosts[other.address]
        assert again.boots == 1 and len(again.outages) == 1 and again.outages[0].up_at is not None
        assert again.outages[0].down_at >= step.started
        assert quiet.boots == 0 and quiet.outages == ()
        assert again.root_removed == frozenset() and quiet.root_removed == {thumbprint}
        assert set(again.service_environments) == set(EGRESS_SERVICES)
        assert again.listening and quiet.listening and evidence.listening() == {rebooted.address, other.address}
        assert found.budget == lab.max_unavailable and found.budget_bypasses == {}


def test_the_labs_destinations_are_its_three_traffic_checks() -> None:
    assert [(d.check, d.name, d.client) for d in LAB_DESTINATIONS] == [
        ("pull-internet", INTERNET_REGISTRY, "go"), ("pull-intranet", INTRANET_REGISTRY, "go"),
        ("fetch-http", INTERNET_HTTP_SITE, "curl")]


async def test_a_linux_nodes_units_at_the_next_boot_are_read_when_the_evidence_settles() -> None:
    """What each unit's files give it at the next boot is read by ``settle`` (off the event loop)
    and handed to ``read``; a ``read`` without one reads it there and then."""
    async with Lab(LabSettings(nodes=0, linux_nodes=1, proxy=False, workloads=False)) as lab:
        node = lab.fleet.linux_nodes[0]
        evidence = LabEvidence(lab)
        step = Step("a step", dt.datetime.now(dt.UTC), members=[node.address], deconfigured=[], before={},
                    positions=evidence.positions())
        assert lab.fleet.client_key is not None
        probe = NodeProbe(lab.fleet.client_key, lab.fleet.port, linux=[node.address],
                          usernames={node.address: node.config.username})
        try:
            status, said = await probe.run_as_root(node.address, (
                "mkdir -p /etc/systemd/system/crio.service.d\n"
                "printf '[Service]\\nEnvironment=\"HTTPS_PROXY=http://proxy:3128\"\\n' "
                "> /etc/systemd/system/crio.service.d/10-proxy.conf\n"))
        finally:
            await probe.close()
        assert status == 0, said
        unread = evidence.read(step, evidence.marks())  # no settle: read there and then
        await evidence.settle()
        settled = evidence.read(step, evidence.marks())
    for found in (unread, settled):
        assert found.hosts is not None
        boot = found.hosts[node.address].boot_environments
        assert boot == {"crio.service": {"HTTPS_PROXY": "http://proxy:3128"}, "kubelet.service": {}}
        # the running process has none of it (no daemon-reload, no restart): only the next boot would
        assert "HTTPS_PROXY" not in (found.hosts[node.address].service_environments["crio.service"] or {})
