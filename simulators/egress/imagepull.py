"""containerd's image pull, as every node kind's container runtime does it: resolve the reference
(``HEAD`` of the manifest), fetch the manifest, then the config and every layer by digest, each
checked against its digest; the proxy chosen for each request by Go's rules from the runtime
process's own environment. Failures read as containerd's (Go's ``net/http`` errors inside).

The node kind supplies the session (its address, its trust, its egress log) and keeps what was
pulled; CRI-O resolves and fetches the same way (containers/image), so one model serves both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from urllib.parse import urlsplit

from proxyfleet.core.imagereference import ImageReference
from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.simulators.egress.client import EgressError, EgressSession, Response

MANIFEST_ACCEPT = ("application/vnd.oci.image.manifest.v1+json, "
                   "application/vnd.docker.distribution.manifest.v2+json, "
                   "application/vnd.oci.image.index.v1+json")
USER_AGENT = "containerd/v1.7.0"


def go_error(error: EgressError, session: EgressSession, host: str, port: int,
             proxy: str | None) -> str:
    """A failed request as Go's ``net/http`` words it (what containerd wraps)."""
    proxy_host = urlsplit(proxy).hostname if proxy else None
    proxy_port = urlsplit(proxy).port if proxy else None
    if error.kind.startswith("proxy-tls") and proxy_host:  # the TLS to an https:// proxy itself
        inner = EgressError(error.kind.removeprefix("proxy-"), error.detail)
        return "proxyconnect tcp: " + go_error(inner, session, proxy_host, proxy_port or 443, None)
    if error.kind == "dns":
        return f"dial tcp: lookup {host}: no such host"
    if error.kind == "proxy-dns":
        return f"proxyconnect tcp: dial tcp: lookup {proxy_host}: no such host"
    if error.kind == "refused":
        return f"dial tcp {host}:{port}: connect: connection refused"
    if error.kind in ("proxy-refused", "proxy-reset"):
        return f"proxyconnect tcp: dial tcp {proxy_host}:{proxy_port}: connect: connection refused"
    if error.kind == "proxy-status":
        return error.detail.split(" ", 1)[1] if " " in error.detail else error.detail
    if error.kind == "tls-unknown-authority":
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if error.kind == "tls-hostname":
        return f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
    if error.kind == "reset":
        return f"read tcp {session.source_address}->{host}:{port}: read: connection reset by peer"
    if error.kind == "timeout":
        return "net/http: TLS handshake timeout"
    return error.detail


class PullFailed(Exception):
    """A pull that failed: ``code`` the gRPC status crictl reports, the message containerd's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


async def pull_image(session: EgressSession, environment: Mapping[str, str], image: ImageReference) -> str:
    """Pull ``image`` over ``session`` with the proxy ``environment`` (the runtime's process
    environment: Go reads it as given, so a case-insensitive mapping models Windows).

    Returns the image id (the config's digest); raises PullFailed with containerd's message.
    """
    rules = CLIENTS["go"]
    ref = str(image)
    base = f"https://{image.host}/v2/{image.repository}"

    async def fetch(method: str, url: str, accept: str | None = None) -> Response:
        decision = rules.decide(environment, url)
        if decision.decision == "error":
            raise PullFailed("Unknown", f"failed to do request: {method.title()} \"{url}\": "
                                        f"{decision.reason}")
        host, port = urlsplit(url).hostname or "", urlsplit(url).port or 443
        try:
            return await session.request(method, url, proxy=decision.proxy,
                                         headers=[("Accept", accept)] if accept else [])
        except EgressError as exc:
            cause = go_error(exc, session, host, port, decision.proxy)
            raise PullFailed("Unknown",
                             f"failed to do request: {method.title()} \"{url}\": {cause}") from None

    try:
        head = await fetch("HEAD", f"{base}/manifests/{image.reference}", MANIFEST_ACCEPT)
    except PullFailed as failure:
        raise PullFailed(failure.code, f"failed to resolve reference \"{ref}\": {failure}") from None
    if head.status == 404:
        raise PullFailed("NotFound", f"failed to resolve reference \"{ref}\": {ref}: not found")
    if head.status >= 400:
        raise PullFailed("Unknown", f"failed to resolve reference \"{ref}\": unexpected status "
                                    f"from HEAD request to {base}/manifests/{image.reference}: "
                                    f"{head.status} {head.reason}")
    digest = head.header("Docker-Content-Digest")
    manifest_response = await fetch("GET", f"{base}/manifests/{digest or image.reference}",
                                    MANIFEST_ACCEPT)
    manifest_bytes = manifest_response.body
    actual = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
    if manifest_response.status != 200 or (digest and digest != actual) or (
            image.digest and image.digest != actual):
        raise PullFailed("Unknown", f"failed to pull and unpack image \"{ref}\": manifest "
                                    f"digest mismatch (expected {digest or image.digest}, got {actual})")
    try:
        manifest = json.loads(manifest_bytes)
        blobs = [manifest["config"], *manifest["layers"]]
    except (ValueError, KeyError, TypeError):
        raise PullFailed("Unknown",
                         f"failed to pull and unpack image \"{ref}\": invalid manifest") from None
    for blob in blobs:
        response = await fetch("GET", f"{base}/blobs/{blob['digest']}")
        got = "sha256:" + hashlib.sha256(response.body).hexdigest()
        if response.status != 200 or got != blob["digest"]:
            raise PullFailed("Unknown", f"failed to pull and unpack image \"{ref}\": failed to "
                                        f"copy: blob {blob['digest']}: digest mismatch or status "
                                        f"{response.status}")
    image_id: str = manifest["config"]["digest"]
    return image_id
