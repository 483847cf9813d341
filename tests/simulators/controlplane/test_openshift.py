"""OpenShift proxy semantics as pure functions: every validation rule, status.noProxy, and the
trusted CA bundle merge (the controller that applies them is tested in test_controllers)."""

from __future__ import annotations

from typing import Any

import pytest
import trustme

from proxyfleet.simulators.controlplane.openshift import (
    ClusterNetworking,
    ProxyConfigError,
    TrustBundleError,
    compute_no_proxy,
    merge_bundles,
    validate_proxy_spec,
)

VALID = "http://proxy.corp:3128"


@pytest.mark.parametrize("spec", [
    {},
    {"httpProxy": VALID},
    {"httpsProxy": VALID},
    {"httpsProxy": "https://proxy.corp:3129"},
    {"httpProxy": "http://10.0.0.5:3128", "httpsProxy": "http://[fd00::5]:3128"},
    {"httpProxy": "http://user:pw@proxy.corp"},
    {"httpProxy": "http://o'brien:p$(Restart-Computer)';x@proxy.corp:3128"},  # Go's url.Parse accepts it
    {"httpProxy": "http://user:p%40ss@proxy.corp:3128"},
    {"httpProxy": VALID, "noProxy": "*"},
    {"httpProxy": VALID, "noProxy": ".svc, .cluster.local,example.com.,10.0.0.0/16,fd00::/8,192.168.1.5"},
    {"httpProxy": VALID, "readinessEndpoints": ["http://www.example.com", "https://www.example.com"]},
])
def test_valid_proxy_specs(spec: dict[str, Any]) -> None:
    validate_proxy_spec(spec)


@pytest.mark.parametrize(("spec", "message"), [
    ({"noProxy": ".svc"}, "at least one of httpProxy or httpsProxy is required"),
    ({"httpProxy": "https://proxy.corp:3128"}, "httpProxy requires a 'http' URI scheme"),
    ({"httpsProxy": "socks5://proxy.corp:1080"}, "httpsProxy requires a 'http' or 'https' URI scheme"),
    ({"httpProxy": "proxy.corp:3128"}, "invalid httpProxy URI"),
    ({"httpProxy": "http://proxy.corp:0"}, "invalid httpProxy URI"),
    ({"httpProxy": "http://proxy.corp:70000"}, "invalid httpProxy URI"),
    ({"httpProxy": "http://bad_host!:3128"}, "invalid httpProxy URI"),
    ({"httpsProxy": "/relative"}, "invalid httpsProxy URI"),
    ({"httpProxy": 'http://us"er:pw@proxy.corp:1'}, "net/url: invalid userinfo"),
    ({"httpProxy": "http://us`er:pw@proxy.corp:1"}, "net/url: invalid userinfo"),
    ({"httpProxy": "http://a b:c@proxy.corp:1"}, "net/url: invalid userinfo"),
    ({"httpsProxy": "http://proxy.corp:3128\nRestart-Computer"}, "invalid control character"),
    ({"httpProxy": VALID, "noProxy": "*.example.com"}, "invalid noProxy: *.example.com"),
    ({"httpProxy": VALID, "noProxy": "example.com;corp.internal"}, "invalid noProxy: example.com;corp.internal"),
    ({"httpProxy": VALID, "noProxy": "a.com,,b.com"}, "invalid noProxy: "),
    ({"httpProxy": VALID, "noProxy": "UPPER.example.com"}, "invalid noProxy: UPPER.example.com"),
    ({"httpProxy": VALID, "noProxy": "10.0.0.0/33"}, "invalid noProxy: 10.0.0.0/33"),
    ({"httpProxy": VALID, "readinessEndpoints": ["ftp://x.example.com"]}, "requires a 'http' or 'https' scheme"),
])
def test_invalid_proxy_specs(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ProxyConfigError) as caught:
        validate_proxy_spec(spec)
    assert message in str(caught.value)


NETWORKS = dict(machine_networks=("10.0.0.0/16",), service_networks=("172.30.0.0/16",),
                cluster_networks=("10.128.0.0/14",), api_internal_url="https://api-int.c1.example.com:6443")


def test_no_proxy_on_aws_with_region() -> None:
    result = compute_no_proxy({"httpsProxy": VALID, "noProxy": "registry.corp,.corp"},
                              ClusterNetworking(**NETWORKS, platform="AWS", region="eu-west-1"))
    assert result == (".cluster.local,.corp,.eu-west-1.compute.internal,.svc,10.0.0.0/16,10.128.0.0/14,"
                      "127.0.0.1,169.254.169.254,172.30.0.0/16,api-int.c1.example.com,localhost,registry.corp")


def test_no_proxy_on_bare_metal_and_gcp() -> None:
    bare = compute_no_proxy({"httpProxy": VALID}, ClusterNetworking(**NETWORKS, platform="BareMetal"))
    assert bare == (".cluster.local,.svc,10.0.0.0/16,10.128.0.0/14,127.0.0.1,172.30.0.0/16,"
                    "api-int.c1.example.com,localhost")
    gcp = compute_no_proxy({"httpProxy": VALID, "noProxy": "localhost"}, ClusterNetworking(**NETWORKS, platform="GCP"))
    assert {"169.254.169.254", "metadata", "metadata.google.internal"} <= set(gcp.split(","))
    assert gcp.split(",").count("localhost") == 1  # de-duplicated


def test_no_proxy_wildcard_and_no_proxy_at_all() -> None:
    assert compute_no_proxy({"httpProxy": VALID, "noProxy": "*"}, ClusterNetworking(**NETWORKS)) == "*"
    assert compute_no_proxy({}, ClusterNetworking(**NETWORKS)) == ""


def test_trust_bundle_merge_and_warnings() -> None:
    user, system = trustme.CA(), trustme.CA()
    leaf = user.issue_cert("server.corp")
    merged = merge_bundles(user.cert_pem.bytes().decode() + leaf.cert_chain_pems[0].bytes().decode(),
                           system.cert_pem.bytes().decode())
    assert merged.pem.count("BEGIN CERTIFICATE") == 3
    assert merged.pem.index(user.cert_pem.bytes().decode().strip()) < merged.pem.index(
        system.cert_pem.bytes().decode().strip())
    assert len(merged.warnings) == 1 and "is not a CA certificate" in merged.warnings[0]
    with pytest.raises(TrustBundleError, match="no certificates found"):
        merge_bundles("just text", system.cert_pem.bytes().decode())
