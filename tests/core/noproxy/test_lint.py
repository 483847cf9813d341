"""Lint findings name the entry, what goes wrong and for which clients; cluster facts add what a
cluster must reach directly."""

from __future__ import annotations

from proxyfleet.core.noproxy.lint import ClusterFacts, lint


def messages(env: dict[str, str], facts: ClusterFacts | None = None) -> dict[str, str]:
    """Each entry's findings, joined (an entry may have several)."""
    found: dict[str, str] = {}
    for f in lint(env, facts):
        found[f.entry] = (found[f.entry] + " | " if f.entry in found else "") + f"{f.severity}: {f.message}"
    return found


def test_upper_and_lower_case_values_that_differ_are_an_error() -> None:
    found = messages({"NO_PROXY": ".a", "no_proxy": ".b", "HTTPS_PROXY": "http://p:1", "https_proxy": "http://p:1"})
    assert found["NO_PROXY/no_proxy"].startswith("error: NO_PROXY and no_proxy differ")


def test_semicolons_blanks_and_star_are_flagged() -> None:
    assert "';' separates WinHTTP" in messages({"NO_PROXY": "a.com;b.com"})["a.com;b.com"]
    assert "blanks separate entries only for curl" in messages({"NO_PROXY": "a.com b.com"})["a.com b.com"]
    assert ".NET does not support '*'" in messages({"NO_PROXY": "*"})["*"]


def test_https_proxy_missing_and_credentials_are_reported_redacted() -> None:
    found = lint({"HTTP_PROXY": "http://user:s3cret@p:3128"})
    assert any(f.entry == "HTTPS_PROXY" and f.severity == "error" for f in found)
    assert any("credentials" in f.message for f in found)
    assert "s3cret" not in str([f.as_json() for f in found])


def test_cluster_facts_require_in_cluster_names_api_and_networks() -> None:
    facts = ClusterFacts(api_hosts=["api-int.lab.example"], service_networks=["172.30.0.0/16"],
                         machine_networks=["10.0.0.0/16"])
    found = messages({"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".cluster.local,10.0.0.0/8"}, facts)
    assert found[".svc"].startswith("error: missing")
    assert "missing" not in found[".cluster.local"]
    assert found["api-int.lab.example"].startswith("error: missing: the kubelet")
    assert found["172.30.0.0/16"].startswith("error: missing: the service network")
    assert "10.0.0.0/16" not in found  # covered by 10.0.0.0/8
