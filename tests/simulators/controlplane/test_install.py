"""The installer's side: install-config.yaml read strictly (types, unknown fields, no YAML aliases)
and turned into the objects the installer creates (Proxy, user-ca-bundle, Infrastructure)."""

from __future__ import annotations

import pytest
import trustme
import yaml

from proxyfleet.simulators.controlplane.install import InstallConfigError, load_install_config, plan

VALID = "http://proxy.corp:3128"


def test_install_config_produces_the_installers_objects() -> None:
    bundle = trustme.CA().cert_pem.bytes().decode()
    config = load_install_config(yaml.safe_dump({
        "baseDomain": "corp.example", "metadata": {"name": "win"},
        "platform": {"aws": {"region": "us-east-1"}},
        "proxy": {"httpProxy": VALID, "httpsProxy": VALID, "noProxy": ".corp"},
        "additionalTrustBundle": bundle}))
    result = plan(config)
    objects = {(key, obj["metadata"]["name"]): obj for key, obj in result.objects}
    proxy = objects[("config.openshift.io/proxies", "cluster")]
    assert proxy["spec"] == {"httpProxy": VALID, "httpsProxy": VALID, "noProxy": ".corp",
                             "trustedCA": {"name": "user-ca-bundle"}}
    assert objects[("/configmaps", "user-ca-bundle")]["data"]["ca-bundle.crt"] == bundle
    infrastructure = objects[("config.openshift.io/infrastructures", "cluster")]
    assert infrastructure["status"]["apiServerInternalURL"] == "https://api-int.win.corp.example:6443"
    assert infrastructure["status"]["platformStatus"] == {"type": "AWS", "aws": {"region": "us-east-1"}}


def test_trust_bundle_policy() -> None:
    bundle = trustme.CA().cert_pem.bytes().decode()
    only = plan(load_install_config(yaml.safe_dump({"additionalTrustBundle": bundle})))
    proxy = dict(only.objects)["config.openshift.io/proxies"]
    assert proxy["spec"]["trustedCA"]["name"] == ""  # Proxyonly and no proxy: not referenced
    always = plan(load_install_config(yaml.safe_dump({"additionalTrustBundle": bundle,
                                                      "additionalTrustBundlePolicy": "Always"})))
    assert dict(always.objects)["config.openshift.io/proxies"]["spec"]["trustedCA"]["name"] == "user-ca-bundle"


@pytest.mark.parametrize(("text", "message"), [
    ("proxy: [unclosed", "not valid YAML"),
    ("bogus: 1", 'unknown field "bogus"'),
    ("proxy: {httpProxy: http://p:1, nope: 2}", 'unknown field "proxy.nope"'),
    ("additionalTrustBundle: not a certificate", "no certificates found"),
    ("platform: {mars: {}}", 'unknown platform "mars"'),
])
def test_bad_install_configs(text: str, message: str) -> None:
    with pytest.raises(InstallConfigError, match=message):
        plan(load_install_config(text))
