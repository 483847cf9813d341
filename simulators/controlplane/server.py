"""The HTTP half of the embedded API server: the Kubernetes REST protocol over aiohttp.

Discovery, get/list/watch with resourceVersion, create/update/patch/delete, status subresources,
label and field selectors, optimistic concurrency, dry run, field validation for the OpenShift
types, Table output for kubectl, and ``Status`` objects with the real reason and code for every
failure. What it does not serve answers 404/405/415 like a real server lacking it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime as dt
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxyfleet.simulators.controlplane import decoding, parameters, patching
from proxyfleet.simulators.controlplane.authorization import (
    ANONYMOUS,
    Identity,
    NodeTokens,
    Request,
    admit,
    allowed,
    forbidden,
)
from proxyfleet.simulators.controlplane.disruption import (
    Budget,
    DisruptionLedger,
    budgets_for,
    check_eviction_body,
    compute_budget_of,
    eviction_decision,
    replica_scales,
)
from proxyfleet.simulators.controlplane.errors import (
    APIError,
    bad_request,
    gone,
    invalid,
    method_not_allowed,
    no_such_path,
    unauthorized,
)
from proxyfleet.simulators.controlplane.resources import (
    GROUP_VERSIONS,
    PDBS,
    PODS,
    REPLICASETS,
    ResourceType,
    find_type,
    prune,
    type_errors,
    types_in,
    unknown_fields,
)
from proxyfleet.simulators.controlplane.selectors import field_selector, label_selector
from proxyfleet.simulators.controlplane.store import Store, Watcher
from proxyfleet.simulators.controlplane.tables import to_table
from proxyfleet.simulators.controlplane.termination import (
    grace_period,
    marked_for_deletion,
    requested_grace,
    terminating,
)

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request size limit
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ANONYMOUS_PATHS = {"/version", "/healthz", "/livez", "/readyz"}
KUBERNETES_VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.4", "gitCommit": "proxyfleet",
                      "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                      "goVersion": "go1.22.5", "compiler": "gc", "platform": "linux/amd64"}

log = logging.getLogger(__name__)
Hook = Callable[[str, ResourceType, dict[str, Any]], None]


@dataclass
class Route:
    resource_type: ResourceType
    namespace: str | None  # None: all namespaces, or cluster-scoped
    name: str | None
    subresource: str | None


@dataclass
class RequestStats:
    requests: int = 0
    by_verb: dict[str, int] = field(default_factory=dict)


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type="application/json",
                        headers=headers)


_METADATA_STRINGS = ("name", "generateName", "namespace", "resourceVersion", "uid", "creationTimestamp",
                     "deletionTimestamp")


def _json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def _attributes(request: web.Request, route: Route) -> Request:
    """The authorizer's view of a request (verb from method, name and the watch flag)."""
    method = request.method
    if method in ("GET", "HEAD"):
        verb = "get" if route.name else ("watch" if parameters.flag(request.query, "watch") else "list")
    elif method == "DELETE":
        verb = "delete" if route.name else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
    return Request(verb, route.resource_type.group, route.resource_type.plural, route.subresource,
                   route.namespace, route.name)


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


class APIServer:
    """The REST layer over a :class:`Store`; ``tokens`` maps bearer tokens to identities, and
    ``node_tokens`` recognises each kubelet's own token."""

    def __init__(self, store: Store, tokens: Mapping[str, Identity], bookmark_interval: float = 30.0,
                 node_tokens: NodeTokens | None = None) -> None:
        self.store = store
        self.tokens = dict(tokens)
        self.node_tokens = node_tokens
        self.bookmark_interval = bookmark_interval
        self.stats = RequestStats()
        self._watch_tasks: set[asyncio.Task[Any]] = set()
        self.disruptions = DisruptionLedger()

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY * 2)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # --- entry ------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.stats.requests += 1
        self.stats.by_verb[request.method] = self.stats.by_verb.get(request.method, 0) + 1
        try:
            identity = ANONYMOUS if request.path in ANONYMOUS_PATHS else self._authenticate(request)
            return await self._dispatch(request, identity)
        except APIError as error:
            return _json(error.status(), error.code)
        except Exception:
            # Never a plain-text 500: whatever slipped through is a Status, as a Go panic
            # recovered by the apiserver's handler chain would be.
            log.exception("the API server failed on %s %s", request.method, request.path)
            return _json(APIError(500, "InternalError", "Internal error occurred: the simulated API "
                                                        "server failed; see the lab log").status(), 500)

    def _authenticate(self, request: web.Request) -> Identity:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        identity = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if identity is None and scheme.lower() == "bearer" and self.node_tokens is not None:
            identity = self.node_tokens.identify(token)
        if identity is None:
            raise unauthorized()
        return identity

    async def _dispatch(self, request: web.Request, identity: Identity) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return _json(KUBERNETES_VERSION)
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if parts[:2] == ["openapi", "v3"]:
            return _json(self._openapi_v3(parts[2:]))
        if not parts or parts[0] not in ("api", "apis"):
            raise no_such_path()
        if parts[0] == "api":
            if len(parts) == 1:
                return _json({"kind": "APIVersions", "versions": ["v1"],
                              "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                              "serverAddress": request.host}]})
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return _json(self._group_list())
            group = parts[1]
            if group not in GROUP_VERSIONS or group == "":
                raise no_such_path()
            if len(parts) == 2:
                return _json(self._group(group))
            version, rest = parts[2], parts[3:]
        if version not in GROUP_VERSIONS.get(group, []):
            raise no_such_path()
        if not rest:
            if request.method != "GET":
                raise method_not_allowed(request.method)
            return _json(self._resource_list(group, version))
        route = self._route(group, version, rest)
        attributes = _attributes(request, route)
        if not allowed(identity, attributes):
            raise forbidden(identity, attributes)
        if identity.node_name is not None and route.resource_type.key == ("", "pods") and route.name:
            # NodeRestriction: a kubelet reads and writes only pods bound to its own node.
            pod = self.store.peek(PODS, route.namespace or "", route.name)
            if pod is not None and (pod.get("spec") or {}).get("nodeName") != identity.node_name:
                raise forbidden(identity, attributes)
        return await self._serve(request, route, lambda obj: admit(identity, attributes, obj))

    # --- discovery -----------------------------------------------------------------------------

    def _group(self, group: str) -> dict[str, Any]:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in GROUP_VERSIONS[group]]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
                "preferredVersion": versions[0]}

    def _group_list(self) -> dict[str, Any]:
        groups = [self._group(g) for g in sorted(GROUP_VERSIONS) if g]
        for entry in groups:
            del entry["kind"], entry["apiVersion"]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = [entry for t in types_in(group, version) for entry in t.api_resources()]
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": resources}

    def _openapi_v3(self, rest: list[str]) -> dict[str, Any]:
        """Just enough OpenAPI v3 for kubectl: which PATCH endpoints take ``fieldValidation``."""
        if not rest:
            paths = {}
            for group, versions in GROUP_VERSIONS.items():
                for version in versions:
                    key = f"apis/{group}/{version}" if group else f"api/{version}"
                    paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash=proxyfleet"}
            return {"paths": paths}
        if rest[0] == "api" and len(rest) == 2:
            group, version = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            group, version = rest[1], rest[2]
        else:
            raise no_such_path()
        if version not in GROUP_VERSIONS.get(group, []):
            raise no_such_path()
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        parameters = [{"name": name, "in": "query", "schema": {"type": "string"}}
                      for name in ("dryRun", "fieldManager", "fieldValidation", "force")]
        operations: dict[str, Any] = {}
        for resource_type in types_in(group, version):
            scope = "/namespaces/{namespace}" if resource_type.namespaced else ""
            gvk = {"group": group, "version": version, "kind": resource_type.kind}
            operation = {"x-kubernetes-group-version-kind": gvk, "parameters": parameters,
                         "responses": {"200": {"description": "OK"}}}
            operations[f"{prefix}{scope}/{resource_type.plural}/{{name}}"] = {
                "get": operation, "put": operation, "patch": operation, "delete": operation}
            operations[f"{prefix}{scope}/{resource_type.plural}"] = {"get": operation, "post": operation}
        return {"openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION["gitVersion"]},
                "paths": operations, "components": {"schemas": {}}}

    # --- routing ----------------------------------------------------------------------------------

    def _route(self, group: str, version: str, rest: list[str]) -> Route:
        namespace: str | None = None
        namespace_subresource = group == "" and rest[2:3] in (["status"], ["finalize"])
        if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_subresource:
            namespace, rest = rest[1], rest[2:]
        resource_type = find_type(group, version, rest[0])
        if resource_type is None or len(rest) > 3:
            raise no_such_path()
        if namespace is not None and not resource_type.namespaced:
            raise no_such_path()
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        eviction = subresource == "eviction" and resource_type.key == ("", "pods")
        if subresource is not None and not eviction and (subresource != "status"
                                                         or not resource_type.status_subresource):
            raise no_such_path()
        return Route(resource_type, namespace, name, subresource)

    async def _serve(self, request: web.Request, route: Route,
                     admission: Callable[[dict[str, Any]], None]) -> web.StreamResponse:
        method = request.method
        query = request.query
        if route.name is None:
            if method == "GET":
                # Decoded for list and watch alike: a bad value is a 400 either way, as ListOptions is.
                timeout_seconds = parameters.integer(query, "timeoutSeconds")
                if parameters.flag(query, "watch"):
                    return await self._watch(request, route, timeout_seconds)
                return self._list(request, route)
            if method == "POST":
                if route.resource_type.namespaced and route.namespace is None:
                    raise no_such_path()
                return _json(*await self._create(request, route, admission))
            if method == "DELETE":
                return self._delete_collection(request, route)
            raise method_not_allowed(method)
        if route.resource_type.namespaced and route.namespace is None:
            raise no_such_path()
        if route.subresource == "eviction":
            if method != "POST":
                raise method_not_allowed(method)
            return _json(*await self._evict(request, route))
        if method == "GET":
            return self._get(request, route)
        if method == "PUT":
            return _json(*await self._update(request, route))
        if method == "PATCH":
            return _json(*await self._patch(request, route))
        if method == "DELETE" and route.subresource is None:
            return await self._delete(request, route)
        raise method_not_allowed(method)

    # --- reads ---------------------------------------------------------------------------------------

    def _predicate(self, request: web.Request, route: Route) -> Callable[[dict[str, Any]], bool]:
        labels = label_selector(request.query.get("labelSelector"))
        fields = field_selector(request.query.get("fieldSelector"), route.resource_type.plural)
        return lambda obj: labels(obj) and fields(obj)

    def _get(self, request: web.Request, route: Route) -> web.Response:
        assert route.name is not None
        obj = self.store.stored(route.resource_type, route.namespace or "", route.name)  # encoded at once
        if _wants_table(request):
            return _json(to_table(route.resource_type.plural, [obj], self.store.resource_version,
                                  request.query.get("includeObject", "Metadata")))
        return _json(obj)

    def _list(self, request: web.Request, route: Route) -> web.Response:
        resource_type = route.resource_type
        query = request.query
        current = self.store.resource_version
        exact = query.get("resourceVersionMatch") == "Exact"
        if exact and query.get("resourceVersion") not in (None, current):
            raise gone("The resourceVersion for the provided list is too old.")
        # the selector's equalities too: an indexed field (a kubelet's spec.nodeName) is looked up
        fields = field_selector(query.get("fieldSelector"), resource_type.plural).equalities
        # the stored objects themselves: encoded below, before any await
        items = self.store.select(resource_type, route.namespace, self._predicate(request, route), fields)
        offset = 0
        if query.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(query["continue"].encode()))
                offset = int(token["offset"])
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: illegal base64 data") from None
        next_token = ""
        if query.get("limit"):
            try:
                limit = int(query["limit"])
            except ValueError:
                raise bad_request(f'invalid limit "{query["limit"]}"') from None
            if limit > 0 and offset + limit < len(items):
                next_token = base64.urlsafe_b64encode(
                    json.dumps({"offset": offset + limit, "rv": current}).encode()).decode()
                items = items[offset:offset + limit]
            else:
                items = items[offset:]
        if _wants_table(request):
            return _json(to_table(resource_type.plural, items, current,
                                  query.get("includeObject", "Metadata"), next_token))
        metadata: dict[str, Any] = {"resourceVersion": current}
        if next_token:
            metadata["continue"] = next_token
        return _json({"kind": resource_type.list_kind, "apiVersion": resource_type.api_version,
                      "metadata": metadata, "items": items})

    async def _watch(self, request: web.Request, route: Route, timeout_seconds: int | None) -> web.StreamResponse:
        query = request.query
        table = _wants_table(request)
        bookmarks = parameters.flag(query, "allowWatchBookmarks")
        # No timeout (or 0): kube-apiserver's --min-request-timeout default.
        deadline = time.monotonic() + (timeout_seconds or 1800)
        predicate = self._predicate(request, route)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            watcher: Watcher | None = self.store.watch(route.resource_type, route.namespace,
                                                       query.get("resourceVersion"), predicate)
        except APIError as error:
            await response.write((json.dumps({"type": "ERROR", "object": error.status()}) + "\n").encode())
            return response
        assert watcher is not None
        task = asyncio.current_task()
        if task is not None:
            self._watch_tasks.add(task)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    event = await watcher.next(min(remaining, self.bookmark_interval))
                except TimeoutError:
                    # Nothing is pending for this watch (``next``), so every event up to the
                    # store's version has been sent: the version a bookmark may claim.
                    if bookmarks:
                        bookmark = {"type": "BOOKMARK", "object": {
                            "kind": route.resource_type.kind,
                            "apiVersion": route.resource_type.api_version,
                            "metadata": {"resourceVersion": self.store.resource_version}}}
                        await response.write((json.dumps(bookmark) + "\n").encode())
                    continue
                if event is None:
                    break
                if table:
                    event = {"type": event["type"],
                             "object": to_table(route.resource_type.plural, [event["object"]],
                                                event["object"]["metadata"]["resourceVersion"],
                                                query.get("includeObject", "Metadata"))}
                await response.write((json.dumps(event) + "\n").encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.stop_watch(watcher)
            if task is not None:
                self._watch_tasks.discard(task)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
        return response

    # --- writes -----------------------------------------------------------------------------------------

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        values = request.query.getall("dryRun", [])
        for value in values:
            if value != "All":
                raise bad_request(f'Invalid dry run value "{value}": supported value is "All"')
        return bool(values)

    async def _body(self, request: web.Request) -> Any:
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise APIError(413, "RequestEntityTooLarge",
                           f"Request entity too large: limit is {MAX_BODY}")
        # read() returns what has arrived so far, not the whole body: loop until EOF
        chunks: list[bytes] = []
        size = 0
        while chunk := await request.content.read(65536):
            size += len(chunk)
            if size > MAX_BODY:
                raise APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")
            chunks.append(chunk)
        return decoding.decode(b"".join(chunks))

    def _check_object(self, request: web.Request, route: Route, obj: Any,
                      headers: dict[str, str]) -> dict[str, Any]:
        resource_type = route.resource_type
        if not isinstance(obj, dict):
            raise bad_request(f"json: cannot unmarshal into Go value of type {resource_type.kind}: "
                              "the body is not a JSON object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version not in (None, resource_type.api_version):
            raise bad_request(f"the API version in the data ({api_version}) does not match the "
                              f"expected API version ({resource_type.api_version})")
        if kind not in (None, resource_type.kind):
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                              f"({resource_type.kind})")
        metadata = obj.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise bad_request("metadata must be an object")
        if resource_type.plural in ("configmaps", "secrets"):
            for key in ("data", "binaryData", "stringData"):
                value = obj.get(key)
                if value is not None and (not isinstance(value, dict) or
                                          not all(isinstance(v, str) for v in value.values())):
                    raise bad_request(f"json: cannot unmarshal into Go struct field "
                                      f"{resource_type.kind}.{key} of type map[string]string")
        schema = resource_type.schema
        if schema is not None:
            unknown = unknown_fields(schema, obj)
            mode = request.query.get("fieldValidation", "Warn")
            if unknown and mode == "Strict":
                listed = ", ".join(f'unknown field "{p.lstrip(".")}"' for p in unknown)
                raise bad_request(f"strict decoding error: {listed}")
            if unknown:
                obj = prune(schema, obj)
                if mode != "Ignore":
                    headers["Warning"] = ", ".join(f'299 - "unknown field \\"{p.lstrip(".")}\\""'
                                                   for p in unknown)
            errors = type_errors(schema, obj)
            if errors:
                raise invalid(resource_type.kind, (metadata or {}).get("name", ""),
                              resource_type.group, errors)
        checked: dict[str, Any] = obj
        return checked

    def _validate_metadata(self, route: Route, obj: dict[str, Any]) -> None:
        resource_type = route.resource_type
        metadata = obj.setdefault("metadata", {})
        for key in _METADATA_STRINGS:
            value = metadata.get(key)
            if value is not None and not isinstance(value, str):
                raise bad_request(f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                                  f"ObjectMeta.metadata.{key} of type string")
        name = metadata.get("name")
        if not name and metadata.get("generateName"):
            name = metadata["generateName"] + base64.b32encode(
                int(time.monotonic_ns() % (1 << 25)).to_bytes(4, "big")).decode()[:5].lower()
            metadata["name"] = name
        if not name:
            raise invalid(resource_type.kind, "", resource_type.group,
                          [("metadata.name", "FieldValueRequired",
                            "Required value: name or generateName is required")])
        pattern, label = (DNS_LABEL, "RFC 1123 label") if resource_type.plural == "namespaces" \
            else (DNS_SUBDOMAIN, "RFC 1123 subdomain")
        if not isinstance(name, str) or not pattern.match(name) or len(name) > 253:
            raise invalid(resource_type.kind, str(name), resource_type.group, [
                ("metadata.name", "FieldValueInvalid",
                 f'Invalid value: "{name}": a lowercase {label} must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an "
                 "alphanumeric character")])
        for key in ("labels", "annotations"):
            values = metadata.get(key)
            if values is not None and (not isinstance(values, dict) or
                                       not all(isinstance(v, str) for v in values.values())):
                raise bad_request(f"json: cannot unmarshal into Go struct field ObjectMeta.metadata.{key} "
                                  "of type map[string]string")
        if resource_type.namespaced:
            given = metadata.get("namespace")
            if given and route.namespace and given != route.namespace:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            metadata["namespace"] = route.namespace
            from proxyfleet.simulators.controlplane.resources import RESOURCE_TYPES

            namespaces = next(t for t in RESOURCE_TYPES if t.plural == "namespaces")
            if self.store.peek(namespaces, "", route.namespace or "") is None:
                raise APIError(404, "NotFound", f'namespaces "{route.namespace}" not found',
                               {"name": route.namespace, "kind": "namespaces"})
        else:
            metadata.pop("namespace", None)

    async def _create(self, request: web.Request, route: Route, admission: Callable[[dict[str, Any]], None]
                      ) -> tuple[dict[str, Any], int, dict[str, str]]:
        headers: dict[str, str] = {}
        decoding.require_json(request.headers.get("Content-Type"))
        obj = self._check_object(request, route, await self._body(request), headers)
        self._validate_metadata(route, obj)
        admission(obj)
        created = self.store.create(route.resource_type, obj, dry_run=self._dry_run(request))
        return created, 201, headers

    async def _update(self, request: web.Request, route: Route) -> tuple[dict[str, Any], int, dict[str, str]]:
        assert route.name is not None
        headers: dict[str, str] = {}
        decoding.require_json(request.headers.get("Content-Type"))
        obj = self._check_object(request, route, await self._body(request), headers)
        obj.setdefault("metadata", {}).setdefault("name", route.name)
        self._validate_metadata(route, obj)
        updated = self.store.update(route.resource_type, route.namespace or "", route.name, obj,
                                    subresource=route.subresource, dry_run=self._dry_run(request))
        return updated, 200, headers

    async def _patch(self, request: web.Request, route: Route) -> tuple[dict[str, Any], int, dict[str, str]]:
        assert route.name is not None
        content_type = request.headers.get("Content-Type", "")
        patching.check_patch_type(content_type)  # 415 before reading a body of the wrong kind
        patch = await self._body(request)
        current = self.store.get(route.resource_type, route.namespace or "", route.name)
        patched = patching.apply_patch(content_type, current, patch)
        headers: dict[str, str] = {}
        patched = self._check_object(request, route, patched, headers)
        self._validate_metadata(route, patched)
        if isinstance(patch, dict) and "resourceVersion" not in (patch.get("metadata") or {}):
            patched["metadata"].pop("resourceVersion", None)  # patches are unconditional by default
        updated = self.store.update(route.resource_type, route.namespace or "", route.name, patched,
                                    subresource=route.subresource, dry_run=self._dry_run(request))
        return updated, 200, headers

    # --- evictions ----------------------------------------------------------------------------

    def budgets(self, pod: dict[str, Any]) -> list[Budget]:
        """The PodDisruptionBudgets that select ``pod``, computed from the pods as they are now."""
        # Read in place (no copies): every eviction asks, and a refused one is asked again.
        namespace = (pod.get("metadata") or {}).get("namespace")
        selecting = budgets_for(pod, self.store.scan(PDBS, namespace))
        if not selecting:
            return []
        pods = self.store.scan(PODS, namespace)
        scales = replica_scales(self.store.scan(REPLICASETS, namespace))
        return [compute_budget_of(pdb, pods, scales) for pdb in selecting]

    async def _evict(self, request: web.Request, route: Route) -> tuple[dict[str, Any], int, dict[str, str]]:
        assert route.name is not None and route.namespace is not None
        body = await self._body(request)
        check_eviction_body(body, route.name, route.namespace)
        pod = self.store.get(PODS, route.namespace, route.name)
        options = body.get("deleteOptions") if isinstance(body, dict) else None
        requested = requested_grace({}, options if isinstance(options, dict) else None)
        if terminating(pod):
            # already going: the eviction is a no-op success (kube-apiserver's "pod is terminating" path)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "code": 201}, 201, {}
        refusal = eviction_decision(pod, self.budgets(pod))
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if refusal is not None:
            self.disruptions.record(pod, node, "refused", refusal.message)
            raise refusal
        if not self._dry_run(request):
            self._delete_pod(pod, requested)
            self.disruptions.record(pod, node, "evicted", "")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201, {}

    def _delete_pod(self, pod: dict[str, Any], requested: int | None, dry_run: bool = False) -> dict[str, Any]:
        """Delete a pod as the pod registry does: at once when it has nothing to stop, else marked
        Terminating for its grace period until its kubelet deletes it (``termination``)."""
        metadata = pod["metadata"]
        grace = grace_period(pod, requested)
        if grace == 0:
            return self.store.delete(PODS, metadata["namespace"], metadata["name"], dry_run=dry_run)
        marked = marked_for_deletion(pod, grace, dt.datetime.now(dt.UTC))
        if marked is None:
            return copy.deepcopy(pod)
        return self.store.mark_deleting(PODS, metadata["namespace"], metadata["name"],
                                        marked["metadata"], dry_run=dry_run)

    async def _delete(self, request: web.Request, route: Route) -> web.Response:
        assert route.name is not None
        if route.resource_type.key == ("", "pods"):
            body = await self._body(request) if request.can_read_body else None
            options = body if isinstance(body, dict) else None
            requested = requested_grace(request.query, options)
            pod = self.store.get(PODS, route.namespace or "", route.name)
            wanted_uid = ((options or {}).get("preconditions") or {}).get("uid")
            if wanted_uid and wanted_uid != pod["metadata"].get("uid"):
                raise APIError(409, "Conflict", f"Precondition failed: UID in precondition: {wanted_uid}, "
                                                f"UID in object meta: {pod['metadata'].get('uid')}")
            if not self._dry_run(request) and not terminating(pod):
                # A pod deleted directly, not evicted: lab evidence of whether its budget allowed it.
                refusal = eviction_decision(pod, self.budgets(pod))
                if refusal is not None:
                    self.disruptions.record(pod, (pod.get("spec") or {}).get("nodeName") or "", "bypassed",
                                            (refusal.details or {}).get("causes", [{}])[0].get("message",
                                                                                              refusal.message))
            # the pod registry returns the object: deleted, or marked Terminating (ReturnDeletedObject)
            return _json(self._delete_pod(pod, requested, dry_run=self._dry_run(request)))
        deleted = self.store.delete(route.resource_type, route.namespace or "", route.name,
                                    dry_run=self._dry_run(request))
        return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                      "details": {"name": route.name, "group": route.resource_type.group,
                                  "kind": route.resource_type.plural,
                                  "uid": deleted["metadata"].get("uid")}})

    def _delete_collection(self, request: web.Request, route: Route) -> web.Response:
        if route.resource_type.namespaced and route.namespace is None:
            raise no_such_path()
        dry_run = self._dry_run(request)
        for obj in self.store.list(route.resource_type, route.namespace, self._predicate(request, route)):
            self.store.delete(route.resource_type, route.namespace or "", obj["metadata"]["name"],
                              dry_run=dry_run)
        return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})

    async def close_watches(self) -> None:
        """End every HTTP watch stream (as an API server restart would); in-process controllers keep theirs."""
        for task in list(self._watch_tasks):
            task.cancel()
