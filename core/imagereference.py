"""Container image references as containerd reads them (``registry/repository:tag@digest``,
Docker Hub's defaults for a bare name): what a node pulls and what an origin serves."""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "registry-1.docker.io"


@dataclass(frozen=True)
class ImageReference:
    registry: str  # as written, e.g. quay.io or docker.io
    repository: str
    tag: str | None
    digest: str | None

    @property
    def host(self) -> str:
        return DOCKER_HUB if self.registry == "docker.io" else self.registry

    @property
    def reference(self) -> str:
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        suffix = f"@{self.digest}" if self.digest else f":{self.tag or 'latest'}"
        return f"{self.registry}/{self.repository}{suffix}"


_REFERENCE = re.compile(r"^(?:(?P<registry>[A-Za-z0-9.-]+(?::\d+)?|\[[0-9a-fA-F:]+\](?::\d+)?)/)?"
                        r"(?P<repository>[a-z0-9]+(?:[._/-][a-z0-9]+)*)"
                        r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
                        r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?$")


def parse_image(text: str) -> ImageReference:
    match = _REFERENCE.match(text)
    if match is None:
        raise ValueError(f"parse reference {text!r}: invalid reference format")
    registry = match.group("registry")
    repository = match.group("repository")
    if registry is None or ("." not in registry and ":" not in registry and registry != "localhost"):
        if registry is not None:
            repository = f"{registry}/{repository}"
        registry = "docker.io"
        if "/" not in repository:
            repository = f"library/{repository}"
    return ImageReference(registry, repository, match.group("tag"), match.group("digest"))
