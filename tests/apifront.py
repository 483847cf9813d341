"""A gateway in front of the embedded API server that refuses chosen requests the way a real API
server does (a ``Status`` body: 409 Conflict, 422 Invalid, 401 for an expired token …) and passes
everything else through: the cluster a restore meets when its writes are refused. Real HTTP on
loopback, the official client on the other side; only the refusals are the test's."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import yaml
from aiohttp import web
from kubernetes import client, config

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.support import serving

REASONS = {401: "Unauthorized", 403: "Forbidden", 409: "Conflict", 422: "Invalid", 500: "InternalError",
           503: "ServiceUnavailable"}


@dataclass
class Refusal:
    method: str
    path_part: str
    status: int
    times: int | None = None  # None: every time
    message: str = "refused by the test's API gateway"


@dataclass
class ApiFront:
    upstream: str
    ca_pem: bytes
    refusals: list[Refusal] = field(default_factory=list)
    refused: list[tuple[str, str, int]] = field(default_factory=list)
    url: str = ""

    def refuse(self, method: str, path_part: str, status: int, times: int | None = None,
               message: str = "refused by the test's API gateway") -> None:
        self.refusals.append(Refusal(method, path_part, status, times, message))

    def _refusal(self, request: web.Request) -> Refusal | None:
        for refusal in self.refusals:
            if request.method == refusal.method and refusal.path_part in request.path:
                if refusal.times is not None:
                    if refusal.times <= 0:
                        continue
                    refusal.times -= 1
                return refusal
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            self.refused.append((request.method, request.path, refusal.status))
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": refusal.message, "reason": REASONS.get(refusal.status, "Unknown"),
                      "code": refusal.status}
            return web.json_response(status, status=refusal.status)
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with aiohttp.ClientSession() as session, session.request(
                request.method, self.upstream + request.path_qs, data=body, headers=headers, ssl=context,
                # a body without a Content-Type stays without one (the client sends none for some writes)
                skip_auto_headers=("Content-Type",)) as answer:
            payload = await answer.read()
            return web.Response(body=payload, status=answer.status,
                                content_type=answer.content_type or "application/json")

    def client(self, plane: ControlPlane, path: Path) -> client.ApiClient:
        """The official client, reaching the cluster through this gateway (its kubeconfig at ``path``)."""
        api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig(plane, path)))
        return api

    def kubeconfig(self, plane: ControlPlane, path: Path) -> Path:
        """A kubeconfig that reaches the cluster through this gateway, as the administrator."""
        document = plane.kubeconfig(server=self.url)
        for cluster in document["clusters"]:
            cluster["cluster"].pop("certificate-authority-data", None)
        path.write_text(yaml.safe_dump(document))
        return path


@contextlib.asynccontextmanager
async def api_front(plane: ControlPlane) -> AsyncIterator[ApiFront]:
    """A gateway to ``plane``'s API server on a free loopback port."""
    front = ApiFront(plane.url, plane.ca_pem)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", front.handle)
    async with serving(app) as url:
        front.url = url
        yield front
