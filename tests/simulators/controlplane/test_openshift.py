"""OpenShift proxy semantics: every validation rule, status.noProxy, the trusted CA bundle and its
injection, install-config handling — pure functions first, then through the running API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trustme
import yaml
from kubernetes import client

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from proxyfleet.simulators.controlplane.install import InstallConfigError, load_install_config, plan
from proxyfleet.simulators.controlplane.openshift import (
    ClusterNetworking,
    ProxyConfigError,
    TrustBundleError,
    compute_no_proxy,
    merge_bundles,
    validate_proxy_spec,
)
from tests.support import wait_until

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


# --- through the API ------------------------------------------------------------------------------


def t(function: Any, *args: Any, **kwargs: Any) -> Any:
    return asyncio.to_thread(function, *args, **kwargs)


PROXY = ("config.openshift.io", "v1", "proxies", "cluster")


async def degraded(api: client.ApiClient) -> dict[str, Any]:
    operator = await t(client.CustomObjectsApi(api).get_cluster_custom_object,
                       "config.openshift.io", "v1", "clusteroperators", "network")
    return next(c for c in operator["status"]["conditions"] if c["type"] == "Degraded")


async def test_status_follows_a_valid_spec(api: client.ApiClient, control_plane: ControlPlane) -> None:
    custom = client.CustomObjectsApi(api)
    await t(custom.patch_cluster_custom_object, *PROXY,
            {"spec": {"httpProxy": VALID, "httpsProxy": VALID, "noProxy": ".corp"}})

    async def status() -> dict[str, Any]:
        return (await t(custom.get_cluster_custom_object, *PROXY)).get("status", {})

    async def applied() -> bool:
        return (await status()).get("noProxy", "").startswith(".cluster.local,.corp,")

    await wait_until(applied, what="status.noProxy")
    assert (await status())["httpsProxy"] == VALID
    assert (await degraded(api))["status"] == "False"
    writes = control_plane.store.writes
    await t(custom.patch_cluster_custom_object, *PROXY, {"metadata": {"labels": {"touch": "1"}}})
    await wait_until(lambda: control_plane.proxy_controller.reconciles > 0, what="a reconcile")
    assert control_plane.store.writes == writes + 1  # the status did not change, so it was not written


async def test_invalid_spec_degrades_and_keeps_the_old_status(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    await t(custom.patch_cluster_custom_object, *PROXY, {"spec": {"httpProxy": VALID}})
    await wait_until(lambda: _has_status(api), what="a status")
    await t(custom.patch_cluster_custom_object, *PROXY, {"spec": {"httpProxy": "https://wrong:3128"}})

    async def is_degraded() -> bool:
        return (await degraded(api))["status"] == "True"

    await wait_until(is_degraded, what="Degraded")
    condition = await degraded(api)
    assert condition["reason"] == "InvalidProxyConfig"
    assert "httpProxy requires a 'http' URI scheme" in condition["message"]
    assert (await t(custom.get_cluster_custom_object, *PROXY))["status"]["httpProxy"] == VALID


async def _has_status(api: client.ApiClient) -> bool:
    proxy = await t(client.CustomObjectsApi(api).get_cluster_custom_object, *PROXY)
    return bool(proxy.get("status", {}).get("httpProxy"))


async def test_trusted_ca_merge_injection_and_rotation(api: client.ApiClient, control_plane: ControlPlane) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    first, second = trustme.CA(), trustme.CA()
    await t(core.create_namespaced_config_map, "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="existing", labels={"config.openshift.io/inject-trusted-cabundle": "true"})))
    await t(core.create_namespaced_config_map, "openshift-config", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="corp-ca"), data={"ca-bundle.crt": first.cert_pem.bytes().decode()}))
    await t(custom.patch_cluster_custom_object, *PROXY,
            {"spec": {"httpsProxy": VALID, "trustedCA": {"name": "corp-ca"}}})

    async def bundle(namespace: str, name: str) -> str:
        configmap = await t(core.read_namespaced_config_map, name, namespace)
        return (configmap.data or {}).get("ca-bundle.crt", "")

    first_pem = first.cert_pem.bytes().decode().strip()
    await wait_until(lambda: _contains(bundle("openshift-config-managed", "trusted-ca-bundle"), first_pem),
                     what="the merged bundle")
    assert control_plane.settings.system_bundle_pem.strip() in await bundle("openshift-config-managed",
                                                                            "trusted-ca-bundle")
    await wait_until(lambda: _contains(bundle("default", "existing"), first_pem), what="injection")
    await t(core.create_namespaced_config_map, "kube-system", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="late", labels={"config.openshift.io/inject-trusted-cabundle": "true"})))
    await wait_until(lambda: _contains(bundle("kube-system", "late"), first_pem), what="injection into a new one")
    await t(core.patch_namespaced_config_map, "corp-ca", "openshift-config",
            {"data": {"ca-bundle.crt": second.cert_pem.bytes().decode()}})
    second_pem = second.cert_pem.bytes().decode().strip()
    await wait_until(lambda: _contains(bundle("default", "existing"), second_pem), what="rotation")
    assert first_pem not in await bundle("kube-system", "late")


async def _contains(text: Any, needle: str) -> bool:
    return needle in await text
