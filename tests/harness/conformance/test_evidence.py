"""The seam's data: where a probed destination's client connects and how its route is decided, and
the reasons a check without lab evidence gives."""

from __future__ import annotations

import pytest

from proxyfleet.harness.conformance.evidence import LAB_ONLY, TRAFFIC_CHECKS, ProbedDestination
from proxyfleet.harness.conformance.results import CHECK_FAMILIES


@pytest.mark.parametrize(("text", "host", "name", "route_url"), [
    ("quay.io/openshift/windows-test:latest", "quay.io", "quay.io", "https://quay.io/v2/"),
    ("registry.corp.example:5000/team/app:1.0", "registry.corp.example:5000", "registry.corp.example",
     "https://registry.corp.example:5000/v2/"),
    # containerd's reading of a bare name: Docker Hub's registry host, not the first path part
    ("busybox:1.36", "registry-1.docker.io", "registry-1.docker.io", "https://registry-1.docker.io/v2/"),
    ("docker.io/library/busybox", "registry-1.docker.io", "registry-1.docker.io", "https://registry-1.docker.io/v2/"),
])
def test_an_images_host_is_where_containerd_connects(text: str, host: str, name: str, route_url: str) -> None:
    destination = ProbedDestination("pull-internet", text, image=True, internet=True)
    assert (destination.host, destination.name, destination.route_url, destination.client) == (
        host, name, route_url, "go")


def test_a_urls_host_drops_credentials_and_keeps_its_port() -> None:
    destination = ProbedDestination("fetch-http", "http://u:p@Example.test:8080/a?b", image=False, internet=True)
    assert destination.host == "Example.test:8080"
    assert destination.name == "example.test"  # as proxies and origins log it
    assert destination.route_url == "http://u:p@Example.test:8080/a?b"  # curl decides on the URL as given
    assert destination.client == "curl"


def test_every_lab_only_check_is_a_check_family_and_says_what_it_needs() -> None:
    assert set(LAB_ONLY) <= set(CHECK_FAMILIES)
    assert set(TRAFFIC_CHECKS) <= set(CHECK_FAMILIES)
    assert all(reason.startswith("needs lab evidence: ") for reason in LAB_ONLY.values())
    assert all(option.startswith("--") for option in TRAFFIC_CHECKS.values())
