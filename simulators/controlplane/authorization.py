"""Who may do what on the embedded API server: bearer tokens to identities, and the decisions
kube-apiserver's Node authorizer and default RBAC make for the identities a lab has.

Identities:

- the administrator (``system:admin``, group ``system:masters``): everything;
- a kubelet (``system:node:<name>``, group ``system:nodes``): what the Node authorizer and the
  ``system:node`` role grant and NodeRestriction admits — read Nodes, create and update *its own*
  Node and status and *its own* Lease, write Events. No Secrets or ConfigMaps (the Node
  authorizer grants only those referenced by pods bound to the node, and the lab's nodes run
  none), nothing in ``config.openshift.io``;
- a bootstrap token (``system:bootstrap:<id>``, group ``system:bootstrappers``): only what
  TLS bootstrapping needs (certificate signing requests, which this server does not serve), so
  nothing here.

Real kubelets authenticate with client certificates obtained by TLS bootstrapping; the lab's
kubelets use per-node bearer tokens derived from a cluster key instead (``NodeTokens``) — the
identity and what it may do are the same.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from proxyfleet.simulators.controlplane.errors import APIError

MASTERS = "system:masters"
NODES = "system:nodes"
BOOTSTRAPPERS = "system:bootstrappers"
NODE_PREFIX = "system:node:"
LEASE_NAMESPACE = "kube-node-lease"


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...]

    @property
    def node_name(self) -> str | None:
        return self.user.removeprefix(NODE_PREFIX) if NODES in self.groups else None


ADMIN = Identity("system:admin", (MASTERS, "system:authenticated"))
ANONYMOUS = Identity("system:anonymous", ("system:unauthenticated",))  # /version, /healthz


def node_identity(name: str) -> Identity:
    return Identity(NODE_PREFIX + name, (NODES, "system:authenticated"))


def bootstrap_identity(token_id: str) -> Identity:
    return Identity(f"system:bootstrap:{token_id}", (BOOTSTRAPPERS, "system:authenticated"))


class NodeTokens:
    """Per-node bearer tokens ``node.<name>.<mac>``, derived from one cluster key, so whoever
    holds the key (the fleet that simulates every node) can give each kubelet its own identity."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key or secrets.token_bytes(32)

    def token(self, node_name: str) -> str:
        mac = hmac.new(self.key, node_name.encode(), hashlib.sha256).hexdigest()[:40]
        return f"node.{node_name}.{mac}"

    def identify(self, token: str) -> Identity | None:
        prefix, _, rest = token.partition(".")
        name = rest.rpartition(".")[0]
        if prefix != "node" or not name or not hmac.compare_digest(self.token(name), token):
            return None
        return node_identity(name)


def new_bootstrap_token() -> tuple[str, str]:
    """(token id, full token) in kubeadm's ``[a-z0-9]{6}.[a-z0-9]{16}`` shape."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    token_id = "".join(secrets.choice(alphabet) for _ in range(6))
    return token_id, token_id + "." + "".join(secrets.choice(alphabet) for _ in range(16))


@dataclass(frozen=True)
class Request:
    """The attributes an authorizer decides on (``authorizer.Attributes``)."""

    verb: str  # get list watch create update patch delete deletecollection
    group: str
    resource: str
    subresource: str | None
    namespace: str | None
    name: str | None


_NODE_READS = {"get", "list", "watch"}
_NODE_WRITES = {"create", "update", "patch"}


def _node_allows(node: str, request: Request) -> bool:
    resource = (request.group, request.resource)
    if resource == ("", "nodes"):
        if request.verb in _NODE_READS and request.subresource is None:
            return True
        # NodeRestriction: a kubelet may create and modify only its own Node object
        return request.verb in _NODE_WRITES and (request.name == node or (request.verb == "create"
                                                                         and request.name is None))
    if resource == ("coordination.k8s.io", "leases"):
        return (request.namespace == LEASE_NAMESPACE and request.verb in _NODE_READS | _NODE_WRITES
                and request.name in (node, None))
    if resource == ("", "pods"):
        # Reads of pods (the kubelet's own, by field selector) and status writes; which pods it
        # may write is NodeRestriction's check, made against the stored pod (``bound_to``).
        if request.subresource is None:
            # delete: the kubelet ends a Terminating pod once its containers stopped (NodeRestriction
            # keeps it to pods bound to its node)
            return request.verb in _NODE_READS or (request.verb == "delete" and request.name is not None)
        return request.subresource == "status" and request.verb in {"update", "patch"}
    if resource in (("", "events"), ("events.k8s.io", "events")):
        return request.verb in {"create", "update", "patch"}
    return False


def allowed(identity: Identity, request: Request) -> bool:
    if MASTERS in identity.groups:
        return True
    node = identity.node_name
    if node is not None:
        return _node_allows(node, request)
    return False  # bootstrappers and anyone else: nothing this server serves


def admit(identity: Identity, request: Request, obj: dict[str, object]) -> None:
    """NodeRestriction for creates: a kubelet creates only its own Node and Lease."""
    node = identity.node_name
    if node is None or request.verb != "create":
        return
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if name != node:
        kind = request.resource.removesuffix("s")
        raise APIError(403, "Forbidden", f'{request.resource} "{name}" is forbidden: node "{node}" is '
                                         f"not allowed to modify {kind} \"{name}\"",
                       {"kind": request.resource, "name": str(name)})


def forbidden(identity: Identity, request: Request) -> APIError:
    """403 in kube-apiserver's words."""
    qualified = f"{request.resource}.{request.group}" if request.group else request.resource
    target = f'{qualified} "{request.name}"' if request.name else qualified
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    scope = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    message = (f'{target} is forbidden: User "{identity.user}" cannot {request.verb} resource '
               f'"{resource}" in API group "{request.group}" {scope}')
    details: dict[str, str] = {"kind": request.resource}
    if request.name:
        details["name"] = request.name
    if request.group:
        details["group"] = request.group
    return APIError(403, "Forbidden", message, dict(details))
