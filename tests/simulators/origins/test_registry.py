"""The origins' OCI registry and web sites, served by aiohttp over a real socket: manifests by
tag or digest, blobs, HEAD, and the registry's own error codes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from proxyfleet.simulators.origins.registry import Registry, build_image, digest_of, website
from tests.support import serving


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Registry]]:
    registry = Registry()
    registry.add(build_image("openshift/windows-test", "latest"))
    app = registry.application()
    app.add_subapp("/site", website("quay.io"))
    async with serving(app) as base:
        yield base, registry


def test_images_are_deterministic_and_content_addressed() -> None:
    image = build_image("a/b", "1")
    assert image == build_image("a/b", "1") and image.reference == "a/b:1"
    assert image.digest == "sha256:" + hashlib.sha256(image.manifest).hexdigest()
    assert all(digest_of(data) == digest for digest, data in image.blobs.items())


async def test_a_pull_reads_the_manifest_and_every_blob(served: tuple[str, Registry]) -> None:
    base, registry = served
    image = registry.images[0]
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/v2/") as response:
            assert response.headers["Docker-Distribution-API-Version"] == "registry/2.0"
        async with http.get(f"{base}/v2/openshift/windows-test/manifests/latest") as response:
            manifest = json.loads(await response.read())
            assert response.headers["Docker-Content-Digest"] == image.digest
        for blob in [manifest["config"], *manifest["layers"]]:
            async with http.get(f"{base}/v2/openshift/windows-test/blobs/{blob['digest']}") as response:
                assert digest_of(await response.read()) == blob["digest"]
        async with http.head(f"{base}/v2/openshift/windows-test/manifests/{image.digest}") as response:
            assert response.status == 200 and int(response.headers["Content-Length"]) == len(image.manifest)
        async with http.get(f"{base}/site/whoami") as response:
            assert (await response.json())["origin"] == "quay.io"


@pytest.mark.parametrize(("path", "code"), [
    ("/v2/nope/manifests/latest", "NAME_UNKNOWN"),
    ("/v2/openshift/windows-test/manifests/v9", "MANIFEST_UNKNOWN"),
    ("/v2/openshift/windows-test/blobs/sha256:" + "0" * 64, "BLOB_UNKNOWN"),
])
async def test_unknown_names_are_the_registrys_404s(served: tuple[str, Registry], path: str, code: str) -> None:
    base, _ = served
    async with aiohttp.ClientSession() as http, http.get(base + path) as response:
        assert response.status == 404
        assert (await response.json())["errors"][0]["code"] == code


async def test_a_probes_own_tag_names_the_repositorys_image(served: tuple[str, Registry]) -> None:
    base, registry = served
    image = registry.images[0]
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/v2/openshift/windows-test/manifests/pf-0123456789ab") as tagged:
            assert tagged.status == 200 and tagged.headers["Docker-Content-Digest"] == image.digest
        async with session.get(f"{base}/v2/openshift/windows-test/manifests/pf-nothex") as other:
            assert other.status == 404  # only a probe's tag is an alias, nothing else is guessed
