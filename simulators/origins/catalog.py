"""The lab's standard destinations: internet origins reachable only through the proxy, intranet
origins reachable directly, all registered in the lab table under their virtual names. One
internet origin speaks plain HTTP on port 80, as Windows' certificate trust list download point
does: its traffic takes ``HTTP_PROXY``, not ``HTTPS_PROXY``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trustme
from aiohttp import web

from proxyfleet.simulators.network import INTERNET_NETWORK, INTRANET_NETWORK, Endpoint, LabNetwork, is_loopback
from proxyfleet.simulators.origins.destinations import Destination, destination_application, group_destinations
from proxyfleet.simulators.origins.registry import Image, Registry, build_image, website
from proxyfleet.simulators.origins.server import AccessRecord, OriginServer, Violation

INTERNET_REGISTRY = "quay.io"
INTERNET_SITE = "www.example.com"
# Plain HTTP on the internet: where Windows fetches its trusted-root list (authrootstl.cab).
INTERNET_HTTP_SITE = "ctldl.windowsupdate.com"
INTRANET_REGISTRY = "registry.corp.internal"
INTRANET_REGISTRY_IP = "10.0.5.20"
INTRANET_SITE = "intranet.corp.internal"
HTTPS_PORT = 443
HTTP_PORT = 80


# The standard origins, in the order they take their addresses: (name, virtual hosts, kind, TLS).
STANDARD_ORIGINS: tuple[tuple[str, tuple[str, ...], str, bool], ...] = (
    ("internet-registry", (INTERNET_REGISTRY,), "internet", True),
    ("internet-site", (INTERNET_SITE, "example.com"), "internet", True),
    ("internet-http-site", (INTERNET_HTTP_SITE,), "internet", False),
    ("intranet-registry", (INTRANET_REGISTRY, INTRANET_REGISTRY_IP), "intranet", True),
    ("intranet-site", (INTRANET_SITE,), "intranet", True),
)
STANDARD_HOSTS = frozenset(host for _name, hosts, _kind, _tls in STANDARD_ORIGINS for host in hosts)


def standard_hosts_file(network: LabNetwork) -> str:
    """The hosts file the standard origins will have once started on their real ports in a lab
    whose addresses come from ``network`` (a fresh one: this takes its next addresses), for a
    proxy that must be configured before the lab starts (``--proxy-url``)."""
    for _name, hosts, kind, tls in STANDARD_ORIGINS:
        address = network.allocate(INTERNET_NETWORK if kind == "internet" else INTRANET_NETWORK)
        for host in hosts:
            port = HTTPS_PORT if tls else HTTP_PORT
            network.add(host, port, Endpoint(address, port), kind)
    return network.hosts_file()


class OriginPortError(OSError):
    """An origin cannot listen on its real port (443 or 80) of its own address."""

    def __init__(self, address: str, port: int, cause: OSError) -> None:
        hint = ("ports below 1024 need root, or net.ipv4.ip_unprivileged_port_start=0 "
                "(sysctl -w net.ipv4.ip_unprivileged_port_start=0)") if isinstance(cause, PermissionError) else \
            "is another lab or program using it?"
        super().__init__(f"an origin cannot listen on {address}:{port} ({cause.strerror or cause}): a proxy "
                         f"that resolves names itself connects to the real port; {hint}")


def real_ports_allowed() -> bool:
    """Whether this process may listen on ports 80 and 443 (root, or unprivileged ports from 0)."""
    if os.geteuid() == 0:
        return True
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text()) <= HTTP_PORT
    except (OSError, ValueError):
        return False


@dataclass
class Origins:
    """Every running origin, with helpers to read what they saw."""

    servers: list[OriginServer] = field(default_factory=list)
    images: dict[str, Image] = field(default_factory=dict)  # "host/repo:tag" -> image
    # The corporate egress firewall: closed, internet origins accept only the proxy's egress
    # address; open (a network without a proxy), they accept any lab address.
    internet_open: bool = False

    def server(self, host: str) -> OriginServer:
        for server in self.servers:
            if host.lower() in server.hosts:
                return server
        raise KeyError(host)

    def violations(self) -> list[Violation]:
        return sorted((v for s in self.servers for v in s.violations), key=lambda v: v.time)

    def access_log(self, host: str) -> list[AccessRecord]:
        return list(self.server(host).access_log)

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop()


async def _start(network: LabNetwork, origins: Origins, public_ca: trustme.CA, name: str,
                 hosts: list[str], app: web.Application, allows: Callable[[str], bool],
                 kind: str, tls: bool = True, real_ports: bool = False, port: int | None = None) -> OriginServer:
    address = network.allocate(INTERNET_NETWORK if kind == "internet" else INTRANET_NETWORK)
    port = port or (HTTPS_PORT if tls else HTTP_PORT)
    server = OriginServer(name=name, hosts=[h.lower() for h in hosts], address=address, app=app,
                          certificate=public_ca.issue_cert(*hosts) if tls else None, allows=allows, kind=kind,
                          port=port if real_ports else 0)
    try:
        await server.start()
    except OSError as exc:
        if not real_ports:
            raise
        raise OriginPortError(address, port, exc) from None
    for host in hosts:
        network.add(host, port, Endpoint(address, server.port), kind)
    origins.servers.append(server)
    return server


async def start_origins(network: LabNetwork, public_ca: trustme.CA, proxy_egress: str,
                        real_ports: bool = False, destinations: Sequence[Destination] = ()) -> Origins:
    """Start the standard origins, then one for each host and port of a customer's
    ``destinations``; internet ones accept only ``proxy_egress``. With ``real_ports`` each listens
    on the port of its URLs (443, 80 for plain HTTP) of its own address, so a proxy that resolves
    the virtual names with a hosts file reaches it there."""
    customer = group_destinations(list(destinations), STANDARD_HOSTS)  # refused before anything starts
    origins = Origins()

    def only_proxy(source: str) -> bool:
        return source == proxy_egress or (origins.internet_open and is_loopback(source))

    def loopback(source: str) -> bool:
        return is_loopback(source)

    quay = Registry()
    corp = Registry()
    for registry, host, references in (
            (quay, INTERNET_REGISTRY, ("openshift/windows-test:latest", "library/pause:3.9")),
            (corp, INTRANET_REGISTRY, ("corp/agent:1.0", "openshift/windows-test:latest"))):
        for reference in references:
            repository, tag = reference.rsplit(":", 1)
            image = registry.add(build_image(repository, tag))
            origins.images[f"{host}/{reference}"] = image
    applications = {"internet-registry": quay.application(), "internet-site": website(INTERNET_SITE),
                    "internet-http-site": website(INTERNET_HTTP_SITE), "intranet-registry": corp.application(),
                    "intranet-site": website(INTRANET_SITE)}
    try:
        for name, hosts, kind, tls in STANDARD_ORIGINS:
            await _start(network, origins, public_ca, name, list(hosts), applications[name],
                         only_proxy if kind == "internet" else loopback, kind, tls=tls, real_ports=real_ports)
        for origin in customer:
            app, images = destination_application(origin)
            for reference, image in images.items():
                origins.images[reference] = image
            await _start(network, origins, public_ca, origin.name, [origin.host], app,
                         only_proxy if origin.kind == "internet" else loopback, origin.kind, tls=origin.tls,
                         real_ports=real_ports, port=origin.port)
    except BaseException:
        await origins.stop()
        raise
    return origins
