"""Image references read as containerd reads them: Docker Hub's defaults for bare names, a
registry with a port, digests; anything else refused in containerd's words."""

from __future__ import annotations

import pytest

from proxyfleet.core.imagereference import parse_image


@pytest.mark.parametrize(("text", "registry", "repository", "reference"), [
    ("quay.io/openshift/windows-test:latest", "quay.io", "openshift/windows-test", "latest"),
    ("busybox", "docker.io", "library/busybox", "latest"),
    ("acme/tool:1.2", "docker.io", "acme/tool", "1.2"),
    ("registry.corp.internal:5000/corp/agent", "registry.corp.internal:5000", "corp/agent", "latest"),
    ("localhost/x@sha256:" + "a" * 64, "localhost", "x", "sha256:" + "a" * 64),
])
def test_image_references_resolve_like_containerd(text: str, registry: str, repository: str, reference: str) -> None:
    image = parse_image(text)
    assert (image.registry, image.repository, image.reference) == (registry, repository, reference)


def test_docker_hub_is_reached_by_its_real_host_name() -> None:
    assert parse_image("busybox").host != "docker.io"


@pytest.mark.parametrize("text", ["Quay.io/UPPER/case", "quay.io/x:", "quay.io/x@sha256:short", ""])
def test_invalid_references_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid reference format"):
        parse_image(text)
