"""Lab evidence for one step, from a real lab: proxy flows since the marks, origin access by
source, firewall refusals — each grouped by the node it came from, from real traffic the node's
curl.exe sends — and the records only a simulator has: boots and outage edges since the step
began, Root store removals, the services' process environments."""

from __future__ import annotations

import datetime as dt

from proxyfleet.core.contract import EGRESS_SERVICES
from proxyfleet.harness.conformance import checks
from proxyfleet.harness.conformance.evidence import Step
from proxyfleet.harness.conformance.expectations import Expected
from proxyfleet.harness.conformance.labevidence import LAB_DESTINATIONS, LabEvidence
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTERNET_REGISTRY, INTRANET_REGISTRY
from tests.support import run_powershell, wait_until

DIRECT = Expected({"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}, {}, {})


async def test_a_steps_traffic_is_grouped_by_node() -> None:
    async with Lab(LabSettings(nodes=1)) as lab:
        assert lab.proxy is not None and lab.fleet.client_key is not None
        address = lab.fleet.nodes[0].address
        evidence = LabEvidence(lab)
        step = Step("a step", dt.datetime.now(dt.UTC), members=[address], deconfigured=[], before={},
                    positions=evidence.positions())
        marks = evidence.marks()
        probe = NodeProbe(lab.fleet.client_key, lab.fleet.port)
        try:
            assert (await probe.fetch(address, f"https://{INTRANET_REGISTRY}/v2/")).ok  # direct, allowed
            refused = await probe.fetch(address, f"https://{INTERNET_REGISTRY}/v2/")  # direct: refused at the firewall
            assert not refused.ok
            via_proxy = await probe._traffic(address, f"curl.exe -sS -f -x {lab.proxy_url} http://{INTERNET_HTTP_SITE}/", 30)
            assert via_proxy.ok, via_proxy.output
        finally:
            await probe.close()
        found = evidence.read(step, marks)
        assert found.origin_sources[INTRANET_REGISTRY] == {address: 1}
        assert found.violations == {address: ["internet-registry"]}
        assert [flow["host"] for _, flow in found.pull_flows[address]] == [INTERNET_HTTP_SITE]
        assert [flow["host"] for flow in found.step_flows[address]] == [INTERNET_HTTP_SITE]
        # the proxy reached the origin from its egress address, not the node's
        assert address not in found.origin_sources[INTERNET_HTTP_SITE]
        assert sum(found.origin_sources[INTERNET_HTTP_SITE].values()) == 1
        # The registry's evidence, judged through the seam: refused at the firewall, as a node
        # without a proxy must be; the same evidence for a node the cluster sends through the proxy
        # fails (nothing went through it).
        pull = LAB_DESTINATIONS[0]
        seen = evidence.traffic(address, pull, DIRECT.route(pull.route_url), refused, found)
        assert seen.observed_by == "lab" and seen.firewalled and seen.seen.refused and not seen.seen.flows
        assert checks.traffic(pull.text, True, DIRECT.route(pull.route_url), seen).ok
        proxied = Expected({"HTTP_PROXY": lab.proxy_url, "HTTPS_PROXY": lab.proxy_url, "NO_PROXY": None}, {}, {})
        assert not checks.traffic(pull.text, True, proxied.route(pull.route_url), seen).ok
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
