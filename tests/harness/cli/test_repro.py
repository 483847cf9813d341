"""``proxyfleet repro`` runs a customer's Proxy through the lab and explains the paths, with their
credentials never printed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import trustme

from proxyfleet.simulators.origins.catalog import real_ports_allowed
from tests.harness.cli.commands import proxyfleet


@pytest.mark.slow
def test_repro_runs_the_customer_proxy_and_explains_the_paths(inputs: Path) -> None:
    (inputs / "bundle.pem").write_bytes(trustme.CA(organization_name="ACME Root").cert_pem.bytes())
    (inputs / "install-config.yaml").write_text("apiVersion: v1\nbaseDomain: acme.example\nmetadata:\n  name: prod\n")
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--ca-bundle", "bundle.pem", "--install-config",
                        "install-config.yaml", "--nodes", "2", "--json", "r.json", cwd=inputs)
    assert result.returncode == 0, result.stderr[-4000:]
    output = result.stdout + result.stderr
    assert "S3cr3t" not in output and "S3cr3t" not in (inputs / "r.json").read_text()
    assert "readinessEndpoints dropped" in output
    assert "proxy.acme.example:8080" in output  # the customer's proxy name, mapped onto the lab proxy
    assert "noproxy explain" in output and "dotnet" in output
    assert "https://api-int.prod.acme.example:6443/api" in output  # the customer's cluster domain
    report = json.loads((inputs / "r.json").read_text())
    [scenario] = report["scenarios"]
    assert scenario["workflow"] == "repro" and scenario["status"] == "passed"
    pulls = [c for c in scenario["checks"] if c["check"] == "pull-internet" and c["step"] == "customer proxy applied"]
    assert pulls and all("via http://***:***@proxy.acme.example:8080" in c["expected"] for c in pulls)



@pytest.mark.slow
def test_repro_adds_the_customers_destinations_and_says_why_one_fails(inputs: Path) -> None:
    destinations = ["--destination", "registry.acme.example/team/app:1.0", "--destination",
                    "https://api.partner.example/health", "--intranet-destination", "https://wiki.acme.local:8443/x"]
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--nodes", "2", "--json", "r.json", *destinations, cwd=inputs)
    assert result.returncode == 0, result.stderr[-4000:]
    output = " ".join((result.stdout + result.stderr).split())
    # "pulls from registry.acme.example fail": the customer's NO_PROXY sends them past the proxy.
    assert ("pull registry.acme.example/team/app:1.0 (internet): containerd direct: NO_PROXY entry '.acme.example' "
            "matches registry.acme.example → FAILS") in output
    assert "fetch https://api.partner.example/health (internet): curl.exe proxy" in output
    [scenario] = json.loads((inputs / "r.json").read_text())["scenarios"]
    judged = [c for c in scenario["checks"] if c["check"] == "destinations" and c["step"] == "customer proxy applied"]
    assert sum(len(c["nodes"]) for c in judged) == 2 and {c["observed"] for c in judged} == {  # grouped records
        "direct, refused by the egress firewall; through the proxy, MITM certificate trusted; "
        "through the proxy, MITM certificate trusted"}
    # The check can fail: without the proxy's CA imported, the intercepted fetches do.
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--nodes", "1", "--json", "r.json", "--variant",
                        "no-cert-import", "--converge-timeout", "5", *destinations, cwd=inputs)
    assert result.returncode == 1
    [scenario] = json.loads((inputs / "r.json").read_text())["scenarios"]
    [failed] = [c for c in scenario["checks"] if c["check"] == "destinations" and c["status"] == "failed"]
    assert "https://api.partner.example/health via" in failed["expected"] and "fetch failed" in failed["observed"]


def test_repro_refuses_a_destination_it_cannot_serve(inputs: Path) -> None:
    for bad, message in (("app:1.0", "names no registry host"), ("quay.io/a/b:1", "one of the lab's own"),
                         ("ftp://files.acme.example/", "only http:// and https://"),
                         ("https://u:S3cr3t@x.acme.example/", "must not carry credentials"),
                         ("https://api.partner.example/docs[/x]", "'[' and ']' only around an IPv6 address")):
        result = proxyfleet("repro", "--proxy", "ok.yaml", "--destination", bad, cwd=inputs)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "S3cr3t" not in result.stderr
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--proxy-command", "squid", "--proxy-tls-port", "3129",
                        cwd=inputs)
    assert result.returncode == 2 and "repro does not take --proxy-tls-port" in result.stderr


SQUID = shutil.which("squid") or ("/usr/sbin/squid" if Path("/usr/sbin/squid").exists() else None)


@pytest.mark.slow
@pytest.mark.skipif(SQUID is None or not real_ports_allowed(),
                    reason="needs Squid and ports 80/443 (root, or net.ipv4.ip_unprivileged_port_start=0)")
def test_repro_runs_the_customer_case_through_a_proxy_like_theirs(inputs: Path) -> None:
    config = Path(__file__).parents[3] / "examples" / "squid" / "squid.conf"
    user = ["--proxy-user", "proxy"] if os.geteuid() == 0 else []
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--nodes", "2", "--json", "r.json",
                        "--proxy-command", f"{SQUID} -N -n {{instance}} -f {{config_dir}}/squid.conf", "--proxy-config", str(config),
                        *user, cwd=inputs)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "customer proxy → your proxy: proxy.acme.example:8080" in result.stderr
    assert "S3cr3t" not in result.stdout + result.stderr + (inputs / "r.json").read_text()
    [scenario] = json.loads((inputs / "r.json").read_text())["scenarios"]
    pulls = [c for c in scenario["checks"] if c["check"] == "pull-internet" and c["step"] == "customer proxy applied"]
    assert pulls and all(c["observed"] == "through the proxy, tunnelled, origin certificate" for c in pulls)


def test_brackets_in_customer_text_are_printed_as_written() -> None:
    """Rich reads ``[…]`` as markup: ``--destination …/docs[/x]`` once crashed repro before any
    report was written. Such a URL is now refused up front (curl would read the brackets as a
    pattern), but scenario names, node output and failure texts still reach the console."""
    import io

    from rich.console import Console

    from proxyfleet.harness.cli.conformance import summary_table
    from proxyfleet.harness.cli.repro import explain_paths
    from proxyfleet.harness.conformance.results import CheckResult, ConformanceRun, ScenarioResult
    from proxyfleet.simulators.origins.destinations import Destination

    weird = Destination("https://api.partner.example/docs[/x]", "internet", "https", "api.partner.example", 443)
    scenario = ScenarioResult(
        name="test_repro[/red]", workflow="repro", status="failed", ending="checks-failed",
        checks=[CheckResult("127.10.0.1", "destinations", "failed", "[bold]reachable[/]", "curl: (6) [/x] [red]",
                            "customer proxy applied")],
        timeline=[{"step": "customer proxy applied", "environment": {"HTTPS_PROXY": "http://proxy.acme.example:8080",
                                                                     "NO_PROXY": ".acme.example,[/x]"}}],
        error="")
    run = ConformanceRun(nodes=1, variant="correct", scenarios=[scenario])
    console = Console(file=io.StringIO(), width=300)
    explain_paths(run, console, [weird])
    console.print(summary_table(run))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "https://api.partner.example/docs[/x]" in text
    assert "test_repro[/red]" in text
