"""A customer's own destinations (``repro --destination``): a URL a node fetches with curl.exe,
or an image it pulls with containerd, served by an origin of its own under the customer's name.

An internet destination sits behind the egress firewall (only the proxy may reach it), an
intranet one answers any node directly, exactly like the lab's standard origins. What such an
origin serves is the lab's: any path of a URL answers 200, an image is a small one built for it.
Not modelled: what the customer's real server answers (redirects, authentication, large layers).

A destination is refused unless a node's probe can carry it as one plain word
(``core.probetargets``): a URL of RFC 3986 characters only, an image reference containerd reads.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from proxyfleet.core.imagereference import ImageReference
from proxyfleet.core.probetargets import ProbeTargetError, check_image, check_url
from proxyfleet.simulators.origins.registry import Image, Registry, build_image

KINDS = ("internet", "intranet")
_HOST_NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


class DestinationError(ValueError):
    """A destination that is neither a URL nor an image reference the lab can serve."""


@dataclass(frozen=True)
class Destination:
    """One customer destination: where it is, how nodes reach it, and what they do with it."""

    text: str  # as given
    kind: str  # "internet" or "intranet"
    scheme: str  # "https" or "http" (an image is always https)
    host: str  # a lower-case name or an IP address, as nodes write it
    port: int
    image: ImageReference | None = None  # a pull; None: a fetch of ``text``

    @property
    def route_url(self) -> str:
        """The URL whose route decides this destination's path (an image: its registry's API)."""
        if self.image is not None:
            return f"https://{self.image.host}/v2/"
        return self.text

    @property
    def client(self) -> str:
        """Whose NO_PROXY reading decides the route on a node: containerd's (Go) or curl.exe's."""
        return "go" if self.image is not None else "curl"

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    @property
    def origin_name(self) -> str:
        """The name of the origin that serves it (one per host and port)."""
        return origin_name(self.host, self.port)

    def describe(self) -> str:
        return f"{'pull' if self.image is not None else 'fetch'} {self.text} ({self.kind})"


def origin_name(host: str, port: int) -> str:
    return f"customer-{host}:{port}"


def parse_destination(text: str, kind: str) -> Destination:
    """``https://host[:port]/path``, ``http://…`` or an image reference with a registry host
    (``registry.acme.example/team/app:1.0``); raises ``DestinationError`` saying what is wrong."""
    if kind not in KINDS:
        raise DestinationError(f"a destination is internet or intranet, not {kind!r}")
    text = text.strip()
    if "://" in text:
        return _url(text, kind)
    try:
        image = check_image(text)
    except ValueError:
        raise DestinationError(f"destination {text!r} is neither a URL (https://host/path) nor an image "
                               "reference (registry.acme.example/team/app:1.0)") from None
    if image.registry == "docker.io" and not text.startswith("docker.io/"):
        raise DestinationError(f"destination {text!r} names no registry host: write it in full "
                               "(registry.acme.example/team/app:1.0)")
    if image.digest is not None:
        raise DestinationError(f"destination {text!r}: give a tag, not a digest (the lab builds the image "
                               "it serves, so its digest is the lab's)")
    parts = urlsplit(f"https://{image.host}/")
    try:
        port = parts.port or 443
    except ValueError:
        raise DestinationError(f"destination {text!r}: the port is not a number from 1 to 65535") from None
    return Destination(text=str(image), kind=kind, scheme="https", host=_host(parts.hostname or "", text),
                       port=port, image=image)


def _url(text: str, kind: str) -> Destination:
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unbalanced "[" or "]"
        raise DestinationError(f"destination {text!r}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise DestinationError(f"destination {text!r}: only http:// and https:// URLs are fetched")
    if parts.username is not None or parts.password is not None:
        raise DestinationError("a destination URL must not carry credentials")
    try:
        port = parts.port
    except ValueError:
        raise DestinationError(f"destination {text!r}: the port is not a number from 1 to 65535") from None
    host = _host(parts.hostname or "", text)
    try:
        check_url(text)  # what a node's probe carries, as one word on every command line
    except ProbeTargetError as exc:
        raise DestinationError(f"destination {text!r}: {exc}") from None
    return Destination(text=text, kind=kind, scheme=parts.scheme, host=host,
                       port=port or (443 if parts.scheme == "https" else 80))


def _host(host: str, text: str) -> str:
    host = host.strip("[]").lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not _HOST_NAME.match(host):
        raise DestinationError(f"destination {text!r}: {host!r} is not a host name")
    return host


@dataclass(frozen=True)
class DestinationOrigin:
    """The origin serving every destination on one host and port."""

    host: str
    port: int
    kind: str
    tls: bool
    destinations: tuple[Destination, ...]

    @property
    def name(self) -> str:
        return origin_name(self.host, self.port)


def group_destinations(destinations: list[Destination], taken: Collection[str]) -> list[DestinationOrigin]:
    """One origin per host and port; ``taken`` are the lab's own names (a customer's cannot be one).
    Raises ``DestinationError`` when the same host is given two ways."""
    groups: dict[tuple[str, int], list[Destination]] = {}
    for destination in destinations:
        if destination.host in taken:
            raise DestinationError(f"destination {destination.text!r}: {destination.host} is one of the lab's "
                                   "own destinations (its checks already cover it)")
        groups.setdefault((destination.host, destination.port), []).append(destination)
    kinds: dict[str, str] = {}
    origins = []
    for (host, port), members in groups.items():
        for member in members:
            if kinds.setdefault(host, member.kind) != member.kind:
                raise DestinationError(f"{host} is given as both an internet and an intranet destination")
        if len({m.scheme for m in members}) > 1:
            raise DestinationError(f"{host}:{port} is given with both http:// and https://")
        origins.append(DestinationOrigin(host, port, members[0].kind, members[0].tls, tuple(members)))
    return origins


def destination_application(origin: DestinationOrigin) -> tuple[web.Application, dict[str, Image]]:
    """The origin's application: a registry with an image built for every image destination (by
    reference), and any other GET path answering 200 naming it (a customer's site)."""
    registry = Registry()
    images: dict[str, Image] = {}
    for destination in origin.destinations:
        if destination.image is not None:
            image = destination.image
            images[str(image)] = registry.add(build_image(image.repository, image.reference))

    async def answer(request: web.Request) -> web.Response:
        return web.Response(text=f"hello from {origin.host}{request.path}\n")

    app = registry.application() if images else web.Application()
    app.router.add_route("GET", "/{path:.*}", answer)
    return app, images
