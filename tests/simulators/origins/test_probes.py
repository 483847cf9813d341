"""A probe's id travels in its image tag or URL query and comes back out of an origin's log."""

from __future__ import annotations

from proxyfleet.simulators.origins.probes import (
    is_probe_tag,
    new_probe_id,
    probe_in,
    tagged_image,
    tagged_url,
)


def test_a_probe_id_goes_into_a_tag_or_a_query_and_is_found_again() -> None:
    probe = new_probe_id()
    assert is_probe_tag(probe) and probe != new_probe_id()
    assert tagged_image("quay.io/openshift/windows-test:latest", probe) == f"quay.io/openshift/windows-test:{probe}"
    assert tagged_image("registry.acme.example:8443/team/app@sha256:" + "a" * 64, probe) == \
        f"registry.acme.example:8443/team/app:{probe}"
    assert tagged_url("http://ctldl.windowsupdate.com/", probe) == \
        f"http://ctldl.windowsupdate.com/?proxyfleet-probe={probe}"
    assert tagged_url("https://api.partner.example/health?x=1", probe) == \
        f"https://api.partner.example/health?x=1&proxyfleet-probe={probe}"
    assert probe_in(f"/v2/openshift/windows-test/manifests/{probe}") == probe
    assert probe_in(f"/?proxyfleet-probe={probe}") == probe
    assert probe_in("/v2/openshift/windows-test/manifests/latest") is None and probe_in(None) is None
    assert not is_probe_tag("latest") and not is_probe_tag("pf-XYZ")
