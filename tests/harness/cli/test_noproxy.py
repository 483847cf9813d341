"""``proxyfleet noproxy explain`` and ``lint`` as a user runs them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from proxyfleet.harness.cli import main


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_explain_json_has_the_documented_shape_and_redacts() -> None:
    code, output = run("noproxy", "explain", "--client", "go", "--json",
                       "--env", "HTTPS_PROXY=http://alice:s3cret@proxy.corp:3128",
                       "--env", "NO_PROXY=.svc,registry.corp.internal",
                       "https://quay.io/v2/", "https://registry.corp.internal/v2/", "::bad")
    assert code == 0
    decisions = json.loads(output)
    assert [set(d) for d in decisions] == [{"url", "client", "decision", "proxy", "reason"}] * 3
    assert [d["decision"] for d in decisions] == ["proxy", "direct", "error"]
    assert decisions[0]["proxy"] == "http://***:***@proxy.corp:3128"
    assert "registry.corp.internal" in decisions[1]["reason"]
    assert "s3cret" not in output


def test_explain_all_shows_every_client_and_the_disagreements() -> None:
    code, output = run("noproxy", "explain", "--client", "all", "--env", "HTTPS_PROXY=http://p:3128",
                       "--env", "NO_PROXY=10.0.0.0/8", "https://10.1.2.3/", "https://quay.io/")
    assert code == 0
    for client in ("go", "client-go", "curl", "python-urllib", "python-requests", "dotnet"):
        assert client in output
    assert "clients disagree on https://10.1.2.3/" in output
    assert "clients disagree on https://quay.io/" not in output
    code, output = run("noproxy", "explain", "--client", "all", "--json", "--env", "proxy-server=p:8080",
                       "https://quay.io/")
    assert {d["client"] for d in json.loads(output)} >= {"winhttp", "go"}


def test_explain_rejects_a_malformed_env_pair() -> None:
    code, output = run("noproxy", "explain", "--client", "go", "--env", "NOEQUALS", "https://quay.io/")
    assert code == 2 and "expected NAME=VALUE" in output


def test_lint_finds_client_differences_and_missing_cluster_entries() -> None:
    code, output = run("noproxy", "lint", "--json",
                       "--env", "HTTP_PROXY=http://p:3128", "--env", "HTTPS_PROXY=http://p:3128",
                       "--env", "NO_PROXY=*.example.com,10.0.0.0/8,registry:5000,.svc",
                       "--api-host", "api-int.c1.example.com", "--service-network", "172.30.0.0/16",
                       "--cluster-network", "10.128.0.0/14")
    findings = json.loads(output)
    by_entry = {f["entry"]: f for f in findings}
    assert code == 1  # errors present
    assert "only Go understands" in by_entry["*.example.com"]["message"]
    assert "python-urllib" in by_entry["10.0.0.0/8"]["clients"]
    assert "port :5000" in by_entry["registry:5000"]["message"]
    assert "curl never reads HTTP_PROXY" in by_entry["HTTP_PROXY"]["message"]
    assert by_entry[".cluster.local"]["severity"] == "error"
    assert by_entry["api-int.c1.example.com"]["severity"] == "error"
    assert by_entry["172.30.0.0/16"]["severity"] == "error"
    assert "10.128.0.0/14" not in by_entry  # covered by 10.0.0.0/8


def test_lint_semicolons_and_case_mismatch() -> None:
    code, output = run("noproxy", "lint", "--json", "--env", "HTTPS_PROXY=http://a:1", "--env", "https_proxy=http://b:1",
                       "--env", "NO_PROXY=a.com;b.com")
    messages = " ".join(f["message"] for f in json.loads(output))
    assert code == 1
    assert "';' separates WinHTTP/WinINet bypass lists" in messages
    assert "HTTPS_PROXY and https_proxy differ" in messages


def test_lint_of_a_clean_configuration_passes() -> None:
    code, output = run("noproxy", "lint", "--env", "HTTPS_PROXY=http://p:3128", "--env", "https_proxy=http://p:3128",
                       "--env", "NO_PROXY=.svc,.cluster.local,localhost,127.0.0.1,api-int.c1.example.com,172.30.0.0/16",
                       "--env", "no_proxy=.svc,.cluster.local,localhost,127.0.0.1,api-int.c1.example.com,172.30.0.0/16",
                       "--api-host", "api-int.c1.example.com", "--service-network", "172.30.0.0/16")
    assert code == 0, output
    assert "error" not in output
