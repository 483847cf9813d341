"""Lab evidence for one step: proxy flows since the marks, origin access by source, firewall
refusals — each grouped by the node it came from, from real traffic the node's curl.exe sends."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from proxyfleet.harness.conformance.evidence import LAB_ONLY, ClusterEvidence, LabEvidence, Step
from proxyfleet.harness.conformance.probe import NodeProbe
from proxyfleet.harness.conformance.results import CHECK_FAMILIES
from proxyfleet.harness.lab import Lab, LabSettings
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTERNET_REGISTRY, INTRANET_REGISTRY


async def test_a_steps_traffic_is_grouped_by_node() -> None:
    async with Lab(LabSettings(nodes=1)) as lab:
        assert lab.proxy is not None and lab.fleet.client_key is not None
        address = lab.fleet.nodes[0].address
        evidence = LabEvidence(lab)
        step = Step("a step", dt.datetime.now(dt.UTC), members=[address], deconfigured=[], boots={}, outages={},
                    violations=len(lab.origins.violations()), before={}, root_removals={})
        marks = evidence.marks()
        probe = NodeProbe(lab.fleet.client_key, lab.fleet.port)
        try:
            assert (await probe.fetch(address, f"https://{INTRANET_REGISTRY}/v2/")).ok  # direct, allowed
            assert not (await probe.fetch(address, f"https://{INTERNET_REGISTRY}/v2/")).ok  # direct: refused
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


def test_an_existing_cluster_offers_no_log_and_every_lab_only_check_says_why() -> None:
    evidence = ClusterEvidence()
    step = Step("a step", dt.datetime.now(dt.UTC), members=["10.0.0.5"], deconfigured=[], boots={}, outages={},
                violations=0, before={}, root_removals={})
    assert evidence.marks() == {"run-proxy": 0}
    found = evidence.read(step, evidence.marks())
    assert not found.routes_observed and found.run_proxy_flows == {} and found.origin_sources == {}
    assert set(LAB_ONLY) <= set(CHECK_FAMILIES)
    assert all(reason.startswith("needs lab evidence: ") for reason in LAB_ONLY.values())


def test_the_runs_own_proxy_log_is_read_by_node_from_the_marks(tmp_path: Path) -> None:
    log = tmp_path / "flows.jsonl"
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)

    def flow(client: str, host: str, when: dt.datetime) -> str:
        return json.dumps({"client": client, "host": host, "kind": "request", "status": 200,
                           "time": when.isoformat()}) + "\n"

    log.write_text(flow("10.0.0.5", "quay.io", earlier))
    evidence = ClusterEvidence(log)
    step = Step("a step", dt.datetime.now(dt.UTC), members=["10.0.0.5"], deconfigured=[], boots={}, outages={},
                violations=0, before={}, root_removals={})
    marks = evidence.marks()
    with log.open("a") as out:
        out.write(flow("10.0.0.5", "registry.corp.example", dt.datetime.now(dt.UTC)))
        out.write("not json\n")
        out.write(flow("10.0.0.6", "quay.io", dt.datetime.now(dt.UTC)))
    found = evidence.read(step, marks)
    assert found.routes_observed
    assert {a: [f["host"] for f in fs] for a, fs in found.run_proxy_flows.items()} == {
        "10.0.0.5": ["registry.corp.example"], "10.0.0.6": ["quay.io"]}
    assert [f["host"] for f in found.step_flows["10.0.0.5"]] == ["registry.corp.example"]  # not the earlier one
