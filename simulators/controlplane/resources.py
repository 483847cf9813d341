"""The resource types the embedded API server serves, as the real API declares them:
group, version, kind, plural, scope, short names, subresources, and (for the OpenShift config
types) the schema that decides which fields are known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Schema nodes: "string", "integer", "boolean", "any", {field: node}, ["list", node].
Schema = Any

CONDITION = {"type": "string", "status": "string", "lastTransitionTime": "string",
             "reason": "string", "message": "string", "lastHeartbeatTime": "string",
             "lastUpdateTime": "string", "observedGeneration": "integer"}
OBJECT_META = "any"  # metadata is validated separately

PROXY_SCHEMA: Schema = {
    "apiVersion": "string", "kind": "string", "metadata": OBJECT_META,
    "spec": {"httpProxy": "string", "httpsProxy": "string", "noProxy": "string",
             "readinessEndpoints": ["list", "string"], "trustedCA": {"name": "string"}},
    "status": {"httpProxy": "string", "httpsProxy": "string", "noProxy": "string"},
}
NETWORK_SCHEMA: Schema = {
    "apiVersion": "string", "kind": "string", "metadata": OBJECT_META,
    "spec": {"clusterNetwork": ["list", {"cidr": "string", "hostPrefix": "integer"}],
             "serviceNetwork": ["list", "string"], "networkType": "string",
             "externalIP": "any", "serviceNodePortRange": "string", "networkDiagnostics": "any"},
    "status": {"clusterNetwork": ["list", {"cidr": "string", "hostPrefix": "integer"}],
               "serviceNetwork": ["list", "string"], "networkType": "string",
               "clusterNetworkMTU": "integer", "conditions": ["list", CONDITION], "migration": "any"},
}
INFRASTRUCTURE_SCHEMA: Schema = {
    "apiVersion": "string", "kind": "string", "metadata": OBJECT_META,
    "spec": {"cloudConfig": {"name": "string", "key": "string"}, "platformSpec": "any"},
    "status": {"infrastructureName": "string", "platform": "string", "platformStatus": "any",
               "apiServerURL": "string", "apiServerInternalURL": "string",
               "etcdDiscoveryDomain": "string", "controlPlaneTopology": "string",
               "infrastructureTopology": "string", "cpuPartitioning": "string"},
}
CLUSTER_OPERATOR_SCHEMA: Schema = {
    "apiVersion": "string", "kind": "string", "metadata": OBJECT_META, "spec": {},
    "status": {"conditions": ["list", CONDITION],
               "versions": ["list", {"name": "string", "version": "string"}],
               "relatedObjects": ["list", {"group": "string", "resource": "string",
                                           "namespace": "string", "name": "string"}],
               "extension": "any"},
}


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    schema: Schema | None = None  # None: fields are not checked (core types)
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def api_resources(self) -> list[dict[str, Any]]:
        """The APIResource entries discovery lists for this type (with subresources)."""
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        entries: list[dict[str, Any]] = [{
            "name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
            "kind": self.kind, "verbs": verbs, "storageVersionHash": "",
        }]
        if self.short_names:
            entries[0]["shortNames"] = list(self.short_names)
        if self.categories:
            entries[0]["categories"] = list(self.categories)
        if self.key == ("", "pods"):
            entries.append({"name": "pods/eviction", "singularName": "", "namespaced": True,
                            "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
        if self.status_subresource:
            entries.append({"name": f"{self.plural}/status", "singularName": "",
                            "namespaced": self.namespaced, "kind": self.kind,
                            "verbs": ["get", "patch", "update"]})
        return entries


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), True),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True),
    ResourceType("", "v1", "Node", "nodes", "node", False, ("no",), True),
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",)),
    # Served (empty unless someone creates one) so `kubectl describe node` can list a node's pods.
    ResourceType("", "v1", "Pod", "pods", "pod", True, ("po",), True, categories=("all",)),
    # The lab's workloads: what a drain must move off a node, and the budgets it must honour.
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), True,
                 categories=("all",)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), True,
                 categories=("all",)),
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget",
                 True, ("pdb",), True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("config.openshift.io", "v1", "Proxy", "proxies", "proxy", False, (), True,
                 PROXY_SCHEMA),
    ResourceType("config.openshift.io", "v1", "Network", "networks", "network", False, (), True,
                 NETWORK_SCHEMA),
    ResourceType("config.openshift.io", "v1", "Infrastructure", "infrastructures",
                 "infrastructure", False, (), True, INFRASTRUCTURE_SCHEMA),
    ResourceType("config.openshift.io", "v1", "ClusterOperator", "clusteroperators",
                 "clusteroperator", False, ("co",), True, CLUSTER_OPERATOR_SCHEMA),
)

GROUP_VERSIONS: dict[str, list[str]] = {}
for _type in RESOURCE_TYPES:
    GROUP_VERSIONS.setdefault(_type.group, [])
    if _type.version not in GROUP_VERSIONS[_type.group]:
        GROUP_VERSIONS[_type.group].append(_type.version)


def resource(group: str, plural: str) -> ResourceType:
    """A served type by group and plural (a programming error if it is not served)."""
    return next(t for t in RESOURCE_TYPES if t.key == (group, plural))


PODS = resource("", "pods")
NODES = resource("", "nodes")
CONFIGMAPS = resource("", "configmaps")
EVENTS = resource("", "events")
LEASES = resource("coordination.k8s.io", "leases")
PROXIES = resource("config.openshift.io", "proxies")
NETWORKS = resource("config.openshift.io", "networks")
INFRASTRUCTURES = resource("config.openshift.io", "infrastructures")
CLUSTER_OPERATORS = resource("config.openshift.io", "clusteroperators")
REPLICASETS = resource("apps", "replicasets")
DAEMONSETS = resource("apps", "daemonsets")
PDBS = resource("policy", "poddisruptionbudgets")


def find_type(group: str, version: str, plural: str) -> ResourceType | None:
    for resource_type in RESOURCE_TYPES:
        if (resource_type.group, resource_type.version, resource_type.plural) == (group, version, plural):
            return resource_type
    return None


def types_in(group: str, version: str) -> list[ResourceType]:
    return [t for t in RESOURCE_TYPES if (t.group, t.version) == (group, version)]


def unknown_fields(schema: Schema, value: Any, path: str = "") -> list[str]:
    """Paths of fields the schema does not declare (for strict field validation and pruning)."""
    if schema == "any" or schema is None:
        return []
    if isinstance(schema, dict) and isinstance(value, dict):
        found = []
        for key, item in value.items():
            if key not in schema:
                found.append(f"{path}.{key}")
            else:
                found.extend(unknown_fields(schema[key], item, f"{path}.{key}"))
        return found
    if isinstance(schema, list) and isinstance(value, list):
        return [p for index, item in enumerate(value)
                for p in unknown_fields(schema[1], item, f"{path}[{index}]")]
    return []


def prune(schema: Schema, value: Any) -> Any:
    """Drop undeclared fields, as the server does without strict validation."""
    if schema == "any" or schema is None:
        return value
    if isinstance(schema, dict) and isinstance(value, dict):
        return {k: prune(schema[k], v) for k, v in value.items() if k in schema}
    if isinstance(schema, list) and isinstance(value, list):
        return [prune(schema[1], item) for item in value]
    return value


def type_errors(schema: Schema, value: Any, path: str = "") -> list[tuple[str, str, str]]:
    """Values of the wrong JSON type: (field, "FieldValueTypeInvalid", message)."""
    expected = {"string": str, "integer": int, "boolean": bool}
    if isinstance(schema, str) and schema in expected and value is not None:
        ok = isinstance(value, expected[schema]) and not (schema == "integer" and isinstance(value, bool))
        if not ok:
            got = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
                   dict: "object"}.get(type(value), "unknown")
            return [(path.lstrip("."), "FieldValueTypeInvalid",
                     f'Invalid value: "{got}": {path.lstrip(".")} in body must be of type {schema}: "{got}"')]
        return []
    if isinstance(schema, dict) and value is not None:
        if not isinstance(value, dict):
            return [(path.lstrip("."), "FieldValueTypeInvalid",
                     f'Invalid value: "{type(value).__name__}": {path.lstrip(".")} in body must be '
                     "of type object")]
        return [e for key, item in value.items() if key in schema
                for e in type_errors(schema[key], item, f"{path}.{key}")]
    if isinstance(schema, list) and value is not None:
        if not isinstance(value, list):
            return [(path.lstrip("."), "FieldValueTypeInvalid",
                     f'Invalid value: "{type(value).__name__}": {path.lstrip(".")} in body must be '
                     "of type array")]
        return [e for index, item in enumerate(value)
                for e in type_errors(schema[1], item, f"{path}[{index}]")]
    return []
