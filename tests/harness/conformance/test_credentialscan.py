"""The credential scan's parts: every string of an object with where it is (keys too), the place
named without the secret, OLM's injected proxy variables recognised by their entry, and discovery of
every listable resource of the embedded API server (subresources are not objects). The scan against
the API server, place by place, is tested in ``test_clusterobjects``."""

from __future__ import annotations

import asyncio

from kubernetes import client

from proxyfleet.harness.conformance import credentialscan
from proxyfleet.harness.conformance.credentialscan import Listable

CONFIGMAPS = Listable("", "v1", "configmaps", "ConfigMap")
PODS = Listable("", "v1", "pods", "Pod")


def test_every_string_with_its_path_keys_included() -> None:
    found = list(credentialscan.strings({"metadata": {"annotations": {"k": "v"}}, "data": ["a", {"b": 1}]}))
    assert (("metadata", "annotations", "k"), "k") in found  # a key can carry a secret too
    assert (("metadata", "annotations", "k"), "v") in found
    assert (("data", "0"), "a") in found and (("data", "1", "b"), "b") in found
    assert all(isinstance(text, str) for _, text in found)  # numbers are not text


def test_a_place_is_named_by_kind_object_and_field_never_by_value() -> None:
    obj = {"metadata": {"name": "applied", "namespace": "ns"}}
    assert credentialscan._where(CONFIGMAPS, obj, ("metadata", "annotations", "example.com/url")) == \
        "ConfigMap ns/applied annotation example.com/url"
    assert credentialscan._where(CONFIGMAPS, obj, ("data", "proxy")) == "ConfigMap ns/applied data.proxy"
    assert credentialscan._where(Listable("", "v1", "nodes", "Node"), {"metadata": {"name": "n"}},
                                 ("metadata", "labels", "x")) == "Node n label x"


def test_olm_injected_proxy_variables_are_known_by_their_entry() -> None:
    pod = {"spec": {"containers": [{"env": [{"name": "HTTPS_PROXY", "value": "u"}, {"name": "OTHER", "value": "u"}]}]}}
    assert credentialscan._olm_env(pod, ("spec", "containers", "0", "env", "0", "value"))
    assert not credentialscan._olm_env(pod, ("spec", "containers", "0", "env", "1", "value"))
    assert not credentialscan._olm_env(pod, ("spec", "containers", "0", "env", "0", "name"))


def test_secret_data_is_decoded_before_it_is_looked_at() -> None:
    secrets = Listable("", "v1", "secrets", "Secret")
    assert credentialscan._decoded(secrets, ("data", "k"), "cGFzcw==") == "pass"
    assert credentialscan._decoded(secrets, ("metadata", "name"), "cGFzcw==") == "cGFzcw=="
    assert credentialscan._decoded(CONFIGMAPS, ("binaryData", "k"), "cGFzcw==") == "pass"
    assert credentialscan._decoded(CONFIGMAPS, ("data", "k"), "cGFzcw==") == "cGFzcw=="


async def test_discovery_finds_every_listable_resource_and_no_subresource(api: client.ApiClient) -> None:
    found = {r.name: r for r in await asyncio.to_thread(credentialscan.listable, api)}
    assert {"pods", "nodes", "configmaps", "secrets", "events", "leases.coordination.k8s.io",
            "proxies.config.openshift.io", "poddisruptionbudgets.policy"} <= set(found)
    assert not [name for name in found if "/" in name]  # pods/eviction, nodes/status: not objects
    assert found["proxies.config.openshift.io"].path == "/apis/config.openshift.io/v1/proxies"
    assert found["pods"].path == "/api/v1/pods"
