"""Who may do what: the kubelets' own tokens and the bootstrap token are refused what kube-apiserver's
Node authorizer, NodeRestriction and RBAC refuse them — Secrets, the Proxy, other nodes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxyfleet.simulators.controlplane.authorization import (
    ADMIN,
    NodeTokens,
    Request,
    allowed,
    bootstrap_identity,
    forbidden,
    node_identity,
)
from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.simulators.controlplane.apirequests import raw

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "win-0001"}}


def _node(name: str) -> bytes:
    return json.dumps({**NODE, "metadata": {"name": name}}).encode()


async def _as(plane: ControlPlane, token: str, method: str, path: str, body: Any = None,
              content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    payload = body if isinstance(body, bytes | None) else json.dumps(body).encode()
    code, status, _ = await raw(plane, method, path, payload, content_type, token=token)
    return code, status


async def test_a_kubelet_manages_its_own_node_and_lease_only(control_plane: ControlPlane) -> None:
    token = control_plane.kubelet_token("win-0001")
    assert (await _as(control_plane, token, "POST", "/api/v1/nodes", _node("win-0001")))[0] == 201
    code, status = await _as(control_plane, token, "POST", "/api/v1/nodes", _node("win-0002"))
    assert (code, status["reason"]) == (403, "Forbidden")
    assert (await _as(control_plane, token, "GET", "/api/v1/nodes"))[0] == 200
    assert (await _as(control_plane, token, "PATCH", "/api/v1/nodes/win-0001/status",
                      {"status": {"capacity": {"cpu": "2"}}}, "application/merge-patch+json"))[0] == 200
    admin_created = await _as(control_plane, "admin", "POST", "/api/v1/nodes", _node("win-0002"))
    assert admin_created[0] == 201
    code, status = await _as(control_plane, token, "PATCH", "/api/v1/nodes/win-0002",
                             {"spec": {"unschedulable": True}}, "application/merge-patch+json")
    assert (code, status["reason"]) == (403, "Forbidden")
    assert 'User "system:node:win-0001" cannot patch resource "nodes"' in status["message"]
    lease = {"metadata": {"name": "win-0001"}, "spec": {"holderIdentity": "win-0001"}}
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    assert (await _as(control_plane, token, "POST", leases, lease))[0] == 201
    other = {"metadata": {"name": "win-0002"}, "spec": {"holderIdentity": "win-0002"}}
    assert (await _as(control_plane, token, "POST", leases, other))[0] == 403


@pytest.mark.parametrize("who", ["kubelet", "bootstrap"])
@pytest.mark.parametrize(("method", "path", "body", "content_type"), [
    ("GET", "/api/v1/namespaces/openshift-windows-machine-config-operator/secrets", None, "application/json"),
    ("GET", "/api/v1/secrets", None, "application/json"),
    ("GET", "/api/v1/namespaces/openshift-config/configmaps", None, "application/json"),
    ("PATCH", "/apis/config.openshift.io/v1/proxies/cluster", {"spec": {"httpProxy": "http://evil:3128"}},
     "application/merge-patch+json"),
    ("PUT", "/apis/config.openshift.io/v1/proxies/cluster/status", {"metadata": {"name": "cluster"}},
     "application/json"),
    ("DELETE", "/api/v1/nodes/win-0001", None, "application/json"),
])
async def test_node_and_bootstrap_tokens_cannot_read_secrets_or_touch_the_proxy(
        control_plane: ControlPlane, who: str, method: str, path: str, body: Any, content_type: str) -> None:
    token = control_plane.kubelet_token("win-0001") if who == "kubelet" else control_plane.bootstrap_token
    proxy_before = control_plane.store.resource_version
    code, status = await _as(control_plane, token, method, path, body, content_type)
    assert (code, status["kind"], status["reason"]) == (403, "Status", "Forbidden")
    assert control_plane.store.resource_version == proxy_before


async def test_the_bootstrap_token_sees_no_nodes_and_forged_node_tokens_are_unknown(
        control_plane: ControlPlane) -> None:
    assert (await _as(control_plane, control_plane.bootstrap_token, "GET", "/api/v1/nodes"))[0] == 403
    real = control_plane.kubelet_token("win-0001")
    forged = real[:-1] + ("0" if real[-1] != "0" else "1")
    assert (await _as(control_plane, forged, "GET", "/api/v1/nodes"))[0] == 401
    assert (await _as(control_plane, "node.win-0001", "GET", "/api/v1/nodes"))[0] == 401
    other_cluster = NodeTokens().token("win-0001")
    assert (await _as(control_plane, other_cluster, "GET", "/api/v1/nodes"))[0] == 401


def test_decisions_as_pure_functions() -> None:
    kubelet = node_identity("win-0001")
    get_secret = Request("get", "", "secrets", None, "ns", "cloud-private-key")
    assert allowed(ADMIN, get_secret)
    assert not allowed(kubelet, get_secret)
    assert not allowed(bootstrap_identity("abcdef"), Request("list", "", "nodes", None, None, None))
    assert allowed(kubelet, Request("watch", "", "nodes", None, None, None))
    assert allowed(kubelet, Request("update", "", "nodes", "status", None, "win-0001"))
    assert not allowed(kubelet, Request("update", "", "nodes", "status", None, "win-0002"))
    assert allowed(kubelet, Request("create", "", "events", None, "default", None))
    assert not allowed(kubelet, Request("delete", "", "events", None, "default", "e"))
    error = forbidden(kubelet, get_secret)
    assert error.message == ('secrets "cloud-private-key" is forbidden: User "system:node:win-0001" cannot get '
                             'resource "secrets" in API group "" in the namespace "ns"')
    cluster_scoped = forbidden(kubelet, Request("patch", "config.openshift.io", "proxies", None, None, "cluster"))
    assert cluster_scoped.message.endswith('in API group "config.openshift.io" at the cluster scope')
