"""Enough of the OCI distribution API for ``crictl pull``: ``/v2/``, manifests by tag and by
digest (GET and HEAD), blobs, with correct sha256 digests and OCI error bodies."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field

from aiohttp import web

from proxyfleet.simulators.origins.probes import is_probe_tag

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    manifest: bytes
    blobs: dict[str, bytes]

    @property
    def digest(self) -> str:
        return digest_of(self.manifest)

    @property
    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"


def build_image(repository: str, tag: str, layer_size: int = 32 * 1024) -> Image:
    """A small, deterministic Windows image: one config blob and one layer."""
    rng = random.Random(f"{repository}:{tag}")
    layer = bytes(rng.getrandbits(8) for _ in range(layer_size))
    config = json.dumps({"architecture": "amd64", "os": "windows",
                         "os.version": "10.0.20348.2031",
                         "rootfs": {"type": "layers", "diff_ids": [digest_of(layer)]},
                         "config": {"Cmd": ["cmd", "/c", "echo", repository]}},
                        sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config), "size": len(config)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": digest_of(layer), "size": len(layer)}],
    }, sort_keys=True).encode()
    return Image(repository, tag, manifest, {digest_of(config): config, digest_of(layer): layer})


def _error(status: int, code: str, message: str, detail: object) -> web.Response:
    return web.json_response({"errors": [{"code": code, "message": message, "detail": detail}]},
                             status=status)


@dataclass
class Registry:
    """The images one registry serves."""

    images: list[Image] = field(default_factory=list)

    def add(self, image: Image) -> Image:
        self.images.append(image)
        return image

    def _repository(self, name: str) -> list[Image]:
        return [image for image in self.images if image.repository == name]

    async def base(self, request: web.Request) -> web.Response:
        return web.json_response({}, headers={"Docker-Distribution-API-Version": "registry/2.0"})

    async def manifest(self, request: web.Request) -> web.Response:
        name, reference = request.match_info["name"], request.match_info["reference"]
        images = self._repository(name)
        if not images:
            return _error(404, "NAME_UNKNOWN", "repository name not known to registry", {"name": name})
        found = next((i for i in images if reference in (i.tag, i.digest)), None)
        if found is None and is_probe_tag(reference):
            found = images[0]  # a probe's own tag (probes.py): the repository's first image
        if found is None:
            return _error(404, "MANIFEST_UNKNOWN", "manifest unknown", {"reference": reference})
        headers = {"Docker-Content-Digest": found.digest, "Content-Type": MANIFEST_TYPE,
                   "Docker-Distribution-API-Version": "registry/2.0"}
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(found.manifest))
            return web.Response(headers=headers)
        return web.Response(body=found.manifest, headers=headers)

    async def blob(self, request: web.Request) -> web.Response:
        name, digest = request.match_info["name"], request.match_info["digest"]
        for image in self._repository(name):
            data = image.blobs.get(digest)
            if data is not None:
                headers = {"Docker-Content-Digest": digest, "Content-Type": "application/octet-stream"}
                if request.method == "HEAD":
                    headers["Content-Length"] = str(len(data))
                    return web.Response(headers=headers)
                return web.Response(body=data, headers=headers)
        return _error(404, "BLOB_UNKNOWN", "blob unknown to registry", {"digest": digest})

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v2/", self.base)
        app.router.add_route("GET", "/v2/{name:.+}/manifests/{reference}", self.manifest)
        app.router.add_route("HEAD", "/v2/{name:.+}/manifests/{reference}", self.manifest)
        app.router.add_route("GET", "/v2/{name:.+}/blobs/{digest}", self.blob)
        app.router.add_route("HEAD", "/v2/{name:.+}/blobs/{digest}", self.blob)
        return app


def website(name: str) -> web.Application:
    """A web site (HTTPS or plain HTTP, as its server speaks): ``/``, ``/healthz``, ``/whoami``."""

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=f"hello from {name}\n")

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def whoami(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        return web.json_response({"origin": name, "source": peer[0] if peer else None,
                                  "host": request.host})

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/whoami", whoami)
    return app
