"""Every string a reconciler can write through the API, looked at for proxy credentials.

What a reconciler may write is not a list of kinds: an annotation on a ConfigMap, a Lease's holder,
a condition's message on any object's status. So the scan asks the API server what it serves
(discovery: every group's preferred version, every resource that can be listed) and reads every
object of each, walking every field — metadata and status included, keys as well as values; a
Secret's ``data`` and a ConfigMap's ``binaryData`` decoded first. Lists are chunked (``limit`` and
``continue``) as a client of a large cluster must.

Not scanned, because the credential must be there and a reconciler does not write it:
- the install-config the Proxy came from (``kube-system/cluster-config-v1``, admins only);
- on a CAPI platform, cluster-apps-operator's Secret ``<cluster>-systemd-proxy`` (the proxy drop-in
  its machines' bootstrap data is made from; the lab writes it too, ``capibootstrap``);
- the Proxy's own proxy URLs (``spec`` and ``status`` ``httpProxy``/``httpsProxy``) — the rest of
  the Proxy object is scanned;
- on an existing cluster only, the platform's documented copies: the Machine Config Operator's
  rendered MachineConfigs and ControllerConfigs (they carry the proxy environment file of every
  Linux node), and proxy-variable ``env`` entries (``HTTP_PROXY``/``HTTPS_PROXY`` and their lower
  case) that Operator Lifecycle Manager injects into every operator's Deployment and its Pods. The
  lab has neither controller, so there those are scanned too.

What the run may not list (403 on an existing cluster), and an API group whose resources the server
would not say (an aggregated API that is down), is reported by name, never guessed; so is what an
existing cluster's run leaves out as a platform copy. A
``ScanCache`` kept across a run's steps walks again only objects whose ``resourceVersion`` changed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from proxyfleet.harness.conformance import checks

# The install-config as the installer stores it: the Proxy's own input (it holds the proxy URL).
INSTALL_CONFIG = "kube-system/cluster-config-v1"
PROXY_URL_FIELDS = frozenset({("spec", "httpProxy"), ("spec", "httpsProxy"),
                              ("status", "httpProxy"), ("status", "httpsProxy")})
PLATFORM_COPIES = frozenset({"machineconfigs.machineconfiguration.openshift.io",
                             "controllerconfigs.machineconfiguration.openshift.io"})
# cluster-apps-operator's Secret name: ``<cluster ID>-systemd-proxy`` (``capibootstrap.secret_name``)
BOOTSTRAP_PROXY_SECRET_SUFFIX = "-systemd-proxy"
OLM_INJECTED = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
CHUNK = 500  # objects per list request


@dataclass(frozen=True)
class Listable:
    """One resource the API server serves and lets a client list."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def name(self) -> str:
        """As kubectl names it: ``pods``, ``proxies.config.openshift.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def path(self) -> str:
        prefix = f"/apis/{self.group}" if self.group else "/api"
        return f"{prefix}/{self.version}/{self.plural}"


@dataclass
class Scan:
    """Where a credential showed up (node address -> places; "" for places about no node), and what
    could not be read (resource -> why)."""

    found: dict[str, list[str]] = field(default_factory=dict)
    unlisted: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # left out on purpose (an existing cluster's platform copies)
    resources: int = 0
    objects: int = 0  # walked (the rest were unchanged since the cache's last scan)


@dataclass
class ScanCache:
    """What each object held when last walked (uid -> (resourceVersion, places)), for the secrets
    looked for then: a step walks only the objects that changed since the previous one."""

    secrets: frozenset[str] = frozenset()
    places: dict[str, tuple[str, list[str]]] = field(default_factory=dict)


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status


def _get(api: client.ApiClient, path: str, query: dict[str, str] | None = None) -> Any:
    """GET a path of the API server as the client's own calls do (its credentials, its TLS)."""
    method, url, headers, body, post = api.param_serialize(
        "GET", path, query_params=list((query or {}).items()), header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    response = api.call_api(method, url, headers, body, post)
    data = response.read()  # type: ignore[no-untyped-call]
    if not 200 <= response.status < 300:
        raise _Refused(response.status, str(response.reason))
    return json.loads(data)


def listable(api: client.ApiClient, refused: dict[str, str] | None = None) -> list[Listable]:
    """Every resource the server lets a client list, once (each group's preferred version;
    subresources are not objects of their own). A group version whose resources the server would
    not say is put in ``refused`` (``group/version`` -> why): its objects cannot be scanned."""
    versions = [("", v) for v in _get(api, "/api").get("versions", [])]
    for group in _get(api, "/apis").get("groups", []):
        preferred = (group.get("preferredVersion") or {}).get("version") or group["versions"][0]["version"]
        versions.append((group["name"], preferred))
    found = []
    for group_name, version in versions:
        path = f"/apis/{group_name}/{version}" if group_name else f"/api/{version}"
        try:
            resources = _get(api, path).get("resources", [])
        except _Refused as exc:  # e.g. an aggregated API that is down: said, not guessed
            if refused is not None:
                refused[f"{group_name or 'core'}/{version} (discovery)"] = str(exc)
            continue
        found += [Listable(group_name, version, r["name"], r.get("kind", ""))
                  for r in resources if "/" not in r["name"] and "list" in r.get("verbs", [])]
    return found


def list_all(api: client.ApiClient, resource: Listable) -> Iterator[dict[str, Any]]:
    """Every object of a resource, across namespaces, in chunks."""
    token = ""
    while True:
        query = {"limit": str(CHUNK), **({"continue": token} if token else {})}
        page = _get(api, resource.path, query)
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string in a JSON value with where it is; a mapping's keys count as strings too."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*path, str(key)), str(key)
            yield from strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, (*path, str(index)))


def _decoded(resource: Listable, path: tuple[str, ...], text: str) -> str:
    """A Secret's ``data`` and a ConfigMap's ``binaryData`` value as the bytes it stands for."""
    if len(path) == 2 and ((resource.name == "secrets" and path[0] == "data")
                           or (resource.name == "configmaps" and path[0] == "binaryData")):
        try:
            return base64.b64decode(text).decode("utf-8", errors="ignore")
        except ValueError:
            return text
    return text


def _olm_env(obj: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether ``path`` is the value of a proxy-variable ``env`` entry (``…env.N.value``)."""
    if len(path) < 3 or path[-1] != "value" or path[-3] != "env":
        return False
    entry: Any = obj
    for key in path[:-1]:
        entry = entry[int(key)] if isinstance(entry, list) else entry.get(key)
    return isinstance(entry, dict) and entry.get("name") in OLM_INJECTED


def _where(resource: Listable, obj: dict[str, Any], path: tuple[str, ...]) -> str:
    metadata = obj.get("metadata") or {}
    name = f"{metadata['namespace']}/{metadata.get('name')}" if metadata.get("namespace") else metadata.get("name")
    kind = resource.kind or resource.name
    if path[:2] in (("metadata", "annotations"), ("metadata", "labels")) and len(path) >= 3:
        return f"{kind} {name} {path[1][:-1]} {path[2]}"  # "Node win-0001 annotation proxyfleet.io/x"
    return f"{kind} {name} {'.'.join(urllib.parse.quote(p, safe='/-_') for p in path)}"


def _places(resource: Listable, obj: dict[str, Any], secrets: set[str], forms: set[str],
            existing_cluster: bool) -> list[str]:
    """Where in one object a secret shows up."""
    places: list[str] = []
    for path, text in strings(obj):
        if resource.name == "proxies.config.openshift.io" and path in PROXY_URL_FIELDS:
            continue
        if existing_cluster and _olm_env(obj, path):
            continue
        if checks.reveals(_decoded(resource, path, text), secrets, forms):
            places.append(_where(resource, obj, path))
    return list(dict.fromkeys(places))


def _about_node(resource: Listable, obj: dict[str, Any], by_node_name: dict[str, str]) -> str:
    """The address of the node a Node, or an Event about one, is about ("" for anything else)."""
    if resource.name == "nodes":
        return by_node_name.get((obj.get("metadata") or {}).get("name", ""), "")
    if resource.kind == "Event":
        involved = obj.get("involvedObject") or obj.get("regarding") or {}
        if involved.get("kind") == "Node":
            return by_node_name.get(involved.get("name", ""), "")
    return ""


def scan(api: client.ApiClient, secrets: set[str], by_node_name: dict[str, str], existing_cluster: bool,
         cache: ScanCache | None = None) -> Scan:
    """Look for ``secrets`` in every object the server lets this client list; a place on a Node, or
    on an Event about one, is filed under that node's address (``by_node_name``)."""
    forms = checks.credential_forms(secrets)
    cache = cache if cache is not None else ScanCache()
    if cache.secrets != frozenset(secrets):
        cache.secrets, cache.places = frozenset(secrets), {}
    result = Scan()
    seen: dict[str, tuple[str, list[str]]] = {}  # an object served twice (Events in two groups) is one place
    try:
        resources = listable(api, result.unlisted)
    except _Refused as exc:
        result.unlisted["discovery"] = str(exc)
        return result
    for resource in resources:
        if existing_cluster and resource.name in PLATFORM_COPIES:
            result.skipped.append(resource.name)
            continue
        try:
            objects = list(list_all(api, resource))
        except _Refused as exc:
            result.unlisted[resource.name] = str(exc)
            continue
        result.resources += 1
        for obj in objects:
            metadata = obj.get("metadata") or {}
            uid = metadata.get("uid") or f"{resource.name}/{metadata.get('namespace')}/{metadata.get('name')}"
            if uid in seen:
                continue
            qualified = f"{metadata.get('namespace')}/{metadata.get('name')}"
            if ((resource.name == "configmaps" and qualified == INSTALL_CONFIG)
                    or (resource.name == "secrets"
                        and str(metadata.get("name") or "").endswith(BOOTSTRAP_PROXY_SECRET_SUFFIX))):
                seen[uid] = ("", [])
                continue
            version = str(metadata.get("resourceVersion") or "")
            cached = cache.places.get(uid)
            if cached is not None and version and cached[0] == version:
                places = cached[1]
            else:
                places = _places(resource, obj, secrets, forms, existing_cluster)
                result.objects += 1
            seen[uid] = (version, places)
            if places:
                result.found.setdefault(_about_node(resource, obj, by_node_name), []).extend(places)
    cache.places = seen  # objects gone since are forgotten
    return result


async def scan_async(api: client.ApiClient, secrets: set[str], by_node_name: dict[str, str],
                     existing_cluster: bool, cache: ScanCache | None = None) -> Scan:
    """``scan`` off the event loop (its reads are the client's blocking calls)."""
    return await asyncio.to_thread(scan, api, secrets, by_node_name, existing_cluster, cache)
