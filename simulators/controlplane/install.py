"""Creating a cluster from an install-config, producing the objects the installer would:
``Proxy/cluster``, ``Network/cluster``, ``Infrastructure/cluster``, the ``user-ca-bundle``
ConfigMap and ``kube-system/cluster-config-v1`` (which keeps the install-config)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import yaml

from proxyfleet.core.contract import BUNDLE_KEY, OPENSHIFT_CONFIG, OPERATOR_NAMESPACE, USER_CA_BUNDLE
from proxyfleet.simulators.controlplane.openshift import validate_bundle

DEFAULT_INSTALL_CONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "baseDomain": "example.com",
    "metadata": {"name": "lab"},
    "networking": {
        "networkType": "OVNKubernetes",
        "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
        "serviceNetwork": ["172.30.0.0/16"],
        "machineNetwork": [{"cidr": "10.0.0.0/16"}],
    },
    "platform": {"none": {}},
}
KNOWN_FIELDS = {"apiVersion", "baseDomain", "metadata", "networking", "platform", "proxy",
                "additionalTrustBundle", "additionalTrustBundlePolicy", "compute", "controlPlane",
                "pullSecret", "sshKey", "fips", "publish", "capabilities", "featureSet",
                "imageContentSources", "imageDigestSources", "credentialsMode", "cpuPartitioningMode",
                "arbiter", "kind"}
PLATFORMS = {"aws": "AWS", "gcp": "GCP", "azure": "Azure", "openstack": "OpenStack",
             "vsphere": "VSphere", "baremetal": "BareMetal", "nutanix": "Nutanix", "none": "None",
             "external": "External", "ibmcloud": "IBMCloud", "powervs": "PowerVS"}
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "openshift-config",
                     "openshift-config-managed", "openshift-network-operator",
                     OPERATOR_NAMESPACE)


class InstallConfigError(ValueError):
    reason = "InvalidInstallConfig"


def field_name(name: Any) -> str:
    """A field name from a file, fit for a one-line error: escaped and cut short."""
    return json.dumps(str(name))[1:-1][:64]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


def _expect(value: Any, wanted: type | tuple[type, ...], where: str) -> None:
    names = {dict: "a mapping", list: "a list", str: "a string", int: "an integer", bool: "a boolean"}
    kinds = wanted if isinstance(wanted, tuple) else (wanted,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(names.get(k, k.__name__) for k in kinds)
        raise InstallConfigError(f"install-config: {where} must be {expected}, not {_kind(value)}")


def _check_types(data: dict[str, Any]) -> None:
    """The types of every field the lab reads (the installer's Go structs would refuse others).
    Messages name fields and types, never the file's values."""
    for key in ("apiVersion", "baseDomain", "additionalTrustBundle", "additionalTrustBundlePolicy",
                "pullSecret", "sshKey", "publish", "kind"):
        if data.get(key) is not None:
            _expect(data[key], str, key)
    for key in ("metadata", "networking", "platform", "proxy"):
        if data.get(key) is not None:
            _expect(data[key], dict, key)
    if data.get("metadata") is not None and data["metadata"].get("name") is not None:
        _expect(data["metadata"]["name"], str, "metadata.name")
    for key, value in (data.get("proxy") or {}).items():
        if value is not None and key in ("httpProxy", "httpsProxy", "noProxy"):  # others: unknown fields
            _expect(value, str, f"proxy.{key}")
    networking = data.get("networking") or {}
    if networking.get("networkType") is not None:
        _expect(networking["networkType"], str, "networking.networkType")
    for key in ("clusterNetwork", "serviceNetwork", "machineNetwork"):
        entries = networking.get(key)
        if entries is None:
            continue
        _expect(entries, list, f"networking.{key}")
        for index, entry in enumerate(entries):
            where = f"networking.{key}[{index}]"
            if key == "serviceNetwork":
                _expect(entry, str, where)
                continue
            _expect(entry, dict, where)
            _expect(entry.get("cidr"), str, f"{where}.cidr")
            if key == "clusterNetwork" and entry.get("hostPrefix") is not None:
                _expect(entry["hostPrefix"], int, f"{where}.hostPrefix")


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: they can make a few bytes expand without bound (and
    recursive ones loop), and no install-config needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.MarkedYAMLError(problem="YAML aliases are not accepted", problem_mark=event.start_mark)
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses anchors and aliases."""
    return yaml.load(text, Loader=_NoAliasLoader)  # a SafeLoader subclass: no arbitrary objects


@dataclass(frozen=True)
class InstallPlan:
    config: dict[str, Any]
    cluster_domain: str
    platform: str
    region: str
    objects: list[tuple[str, dict[str, Any]]]  # (resource plural key "group/plural", object)

    @property
    def api_internal_host(self) -> str:
        return f"api-int.{self.cluster_domain}"

    @property
    def api_host(self) -> str:
        return f"api.{self.cluster_domain}"


def load_install_config(text: str | None) -> dict[str, Any]:
    if text is None:
        return copy.deepcopy(DEFAULT_INSTALL_CONFIG)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "unreadable"
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InstallConfigError(f"install-config is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise InstallConfigError(f"install-config must be a YAML mapping, not {_kind(data)}")
    unknown = sorted(str(k) for k in set(data) - KNOWN_FIELDS)
    if unknown:
        raise InstallConfigError(f'install-config: unknown field "{field_name(unknown[0])}"')
    _check_types(data)
    merged = copy.deepcopy(DEFAULT_INSTALL_CONFIG)
    merged.update(data)
    networking = {**DEFAULT_INSTALL_CONFIG["networking"], **(data.get("networking") or {})}
    merged["networking"] = networking
    return merged


def plan(config: dict[str, Any], api_port: int = 6443) -> InstallPlan:
    name = (config.get("metadata") or {}).get("name") or "lab"
    base_domain = config.get("baseDomain") or "example.com"
    cluster_domain = f"{name}.{base_domain}"
    platform_block = config.get("platform") or {"none": {}}
    if not isinstance(platform_block, dict) or len(platform_block) != 1:
        raise InstallConfigError("install-config: platform must name exactly one platform")
    platform_key, platform_config = next(iter(platform_block.items()))
    platform = PLATFORMS.get(platform_key)
    if platform is None:
        raise InstallConfigError(f'install-config: unknown platform "{platform_key}"')
    region = str((platform_config or {}).get("region", "")) if isinstance(platform_config, dict) else ""
    networking = config["networking"]
    try:
        cluster_networks = [{"cidr": n["cidr"], "hostPrefix": int(n.get("hostPrefix", 23))}
                            for n in networking.get("clusterNetwork") or []]
        service_networks = [str(n) for n in networking.get("serviceNetwork") or []]
        for machine in networking.get("machineNetwork") or []:
            str(machine["cidr"])  # the proxy controller reads these back from cluster-config-v1
    except (KeyError, TypeError, ValueError) as exc:
        raise InstallConfigError(f"install-config: malformed networking: {exc}") from None
    proxy = config.get("proxy") or {}
    if not isinstance(proxy, dict):
        raise InstallConfigError("install-config: proxy must be a mapping")
    unknown_proxy = sorted(set(proxy) - {"httpProxy", "httpsProxy", "noProxy"}, key=str)
    if unknown_proxy:
        raise InstallConfigError(f'install-config: unknown field "proxy.{field_name(unknown_proxy[0])}"')
    bundle = config.get("additionalTrustBundle") or ""
    policy = config.get("additionalTrustBundlePolicy") or "Proxyonly"
    if policy not in ("Proxyonly", "Always"):
        raise InstallConfigError(f'install-config: additionalTrustBundlePolicy "{policy}" must be '
                                 'Proxyonly or Always')
    if bundle:
        try:
            validate_bundle(bundle, "additionalTrustBundle")
        except ValueError as exc:
            raise InstallConfigError(f"install-config: {exc}") from None
    objects: list[tuple[str, dict[str, Any]]] = [
        ("/namespaces", {"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]},
                         "status": {"phase": "Active"}}) for ns in SYSTEM_NAMESPACES]
    proxy_spec: dict[str, Any] = {k: proxy[k] for k in ("httpProxy", "httpsProxy", "noProxy") if proxy.get(k)}
    if bundle:
        objects.append(("/configmaps", {"metadata": {"name": USER_CA_BUNDLE, "namespace": OPENSHIFT_CONFIG},
                                        "data": {BUNDLE_KEY: bundle}}))
        if policy == "Always" or proxy_spec:
            proxy_spec["trustedCA"] = {"name": USER_CA_BUNDLE}
    if "trustedCA" not in proxy_spec:
        proxy_spec["trustedCA"] = {"name": ""}
    objects.append(("config.openshift.io/proxies", {"metadata": {"name": "cluster"}, "spec": proxy_spec}))
    objects.append(("config.openshift.io/networks", {
        "metadata": {"name": "cluster"},
        "spec": {"clusterNetwork": cluster_networks, "serviceNetwork": service_networks,
                 "networkType": networking.get("networkType", "OVNKubernetes")},
        "status": {"clusterNetwork": cluster_networks, "serviceNetwork": service_networks,
                   "networkType": networking.get("networkType", "OVNKubernetes")}}))
    platform_status: dict[str, Any] = {"type": platform}
    if region:
        platform_status[platform.lower()] = {"region": region}
    objects.append(("config.openshift.io/infrastructures", {
        "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": platform}},
        "status": {"infrastructureName": f"{name}-lab", "platform": platform,
                   "platformStatus": platform_status,
                   "apiServerURL": f"https://api.{cluster_domain}:{api_port}",
                   "apiServerInternalURL": f"https://api-int.{cluster_domain}:{api_port}",
                   "etcdDiscoveryDomain": "", "controlPlaneTopology": "HighlyAvailable",
                   "infrastructureTopology": "HighlyAvailable"}}))
    objects.append(("config.openshift.io/clusteroperators", {"metadata": {"name": "network"}, "spec": {}}))
    redacted = copy.deepcopy(config)
    redacted.pop("pullSecret", None)
    objects.append(("/configmaps", {"metadata": {"name": "cluster-config-v1", "namespace": "kube-system"},
                                    "data": {"install-config": yaml.safe_dump(redacted, sort_keys=False)}}))
    return InstallPlan(config, cluster_domain, platform, region, objects)
