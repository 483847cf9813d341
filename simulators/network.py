"""The lab's virtual network: one table from virtual names and IPs to real loopback endpoints.

Clients decide proxy-or-direct on the *virtual* URL (``https://quay.io/v2/``,
``https://10.0.5.20:6443/``), then connect to the loopback endpoint the table maps it to. A name
the table does not know fails like DNS would; nothing is ever sent to a non-loopback address —
``add`` refuses non-loopback endpoints and ``resolve`` is the only way to an endpoint.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Address plan (all inside 127.0.0.0/8). Nodes live in 127.10.0.0/16 (see proxyfleet.simulators.fleet).
PROXY_NETWORK = "127.20.0.0/24"
INTERNET_NETWORK = "127.30.0.0/24"
INTRANET_NETWORK = "127.40.0.0/24"
CONTROL_PLANE_NETWORK = "127.50.0.0/24"


class NetworkError(OSError):
    """Base of lab network failures; ``reason`` names the kind."""

    reason = "NetworkError"


class NoSuchHost(NetworkError):
    """The name is not in the lab table: what a DNS failure looks like."""

    reason = "NoSuchHost"

    def __init__(self, host: str, table: str = "the lab network table") -> None:
        super().__init__(f"lookup {host}: no such host (not in {table})")
        self.host = host


class NoRoute(NetworkError):
    """An address or port the lab does not serve: the connection would be refused."""

    reason = "NoRoute"

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"dial tcp {host}:{port}: connect: connection refused "
                         "(no lab endpoint for this address and port)")
        self.host = host
        self.port = port


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Endpoint:
    address: str
    port: int

    def __post_init__(self) -> None:
        if not is_loopback(self.address):
            raise ValueError(f"{self.address} is not a loopback address; the lab never leaves "
                             "127.0.0.0/8 and ::1")


@dataclass(frozen=True)
class ClusterEndpoint(Endpoint):
    """An address the user named for an existing cluster's nodes to reach (where a run against
    that cluster starts its proxy): the user's network, not the lab's, so not held to loopback."""

    def __post_init__(self) -> None:
        if not self.address:
            raise ValueError("an endpoint needs an address")


@dataclass(frozen=True)
class Route:
    host: str  # virtual name or IP literal, lower-case
    port: int  # virtual port
    endpoint: Endpoint
    kind: str  # "internet", "intranet", "proxy", "control-plane", "node"


class LabNetwork:
    """The table, plus loopback address allocation for lab components."""

    def __init__(self, lab_index: int = 0) -> None:
        if not 0 <= lab_index < 256:
            raise ValueError(f"lab index {lab_index} is outside 0..255")
        self._routes: dict[tuple[str, int], Route] = {}
        self._counters: dict[str, Iterator[int]] = {}
        # Labs running side by side (one per test worker) take different /24s of each range, so
        # components that must listen on fixed ports (origins on 443, a vendor proxy) never clash.
        self.lab_index = lab_index

    @staticmethod
    def _key(host: str) -> str:
        host = host.strip().lower().rstrip(".")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return host

    def allocate(self, network: str) -> str:
        """The next unused address of a lab address range."""
        counter = self._counters.setdefault(network, itertools.count(1))
        base = ipaddress.ip_network(network)
        return str(base.network_address + 256 * self.lab_index + next(counter))

    def add(self, host: str, port: int, endpoint: Endpoint, kind: str) -> Route:
        route = Route(self._key(host), port, endpoint, kind)
        self._routes[(route.host, port)] = route
        return route

    def remove(self, host: str, port: int) -> None:
        self._routes.pop((self._key(host), port), None)

    def knows(self, host: str) -> bool:
        key = self._key(host)
        return any(route_host == key for route_host, _ in self._routes)

    def resolve(self, host: str, port: int) -> Route:
        """The route for a virtual host and port; raises NoSuchHost or NoRoute."""
        key = self._key(host)
        route = self._routes.get((key, port))
        if route is not None:
            return route
        try:
            ipaddress.ip_address(key)
        except ValueError:
            if not self.knows(key):
                raise NoSuchHost(host) from None
        raise NoRoute(host, port)

    def routes(self) -> list[Route]:
        return sorted(self._routes.values(), key=lambda r: (r.host, r.port))

    def names(self, kind: str | None = None) -> list[str]:
        return sorted({r.host for r in self._routes.values() if kind is None or r.kind == kind})

    def hosts_file(self) -> str:
        """The table as a hosts file, for a proxy that resolves names itself: each origin name with
        its loopback address, where the origin listens on the name's own port (a proxy given only
        an address connects to the port of the URL). Names served on another port are left out,
        listed in a comment."""
        lines = ["# proxyfleet lab: virtual names of the lab's origins -> their loopback addresses"]
        entries: dict[str, str] = {}
        unreachable: set[str] = set()
        for route in self.routes():
            if route.kind not in ("internet", "intranet"):
                continue
            try:
                ipaddress.ip_address(route.host)
                continue  # an IP literal needs no name
            except ValueError:
                pass
            if route.endpoint.port == route.port:
                entries.setdefault(route.host, route.endpoint.address)
            else:
                unreachable.add(route.host)
        lines += [f"{address} {host}" for host, address in sorted(entries.items())]
        missing = sorted(unreachable - entries.keys())
        if missing:
            lines.append("# not on their own ports (not bindable here): " + " ".join(missing))
        return "\n".join(lines) + "\n"

    # --- sharing with other processes (mitmdump) -------------------------------------------

    def to_json(self) -> str:
        return json.dumps([{"host": r.host, "port": r.port, "address": r.endpoint.address,
                            "endpoint_port": r.endpoint.port, "kind": r.kind}
                           for r in self.routes()], indent=1)

    @classmethod
    def from_json(cls, text: str) -> LabNetwork:
        network = cls()
        for item in json.loads(text):
            network.add(item["host"], int(item["port"]),
                        Endpoint(item["address"], int(item["endpoint_port"])), item["kind"])
        return network

    def write(self, path: Path) -> None:
        """Write the table atomically (the proxy addon re-reads it when it changes)."""
        temporary = path.with_suffix(".tmp")
        temporary.write_text(self.to_json())
        os.replace(temporary, path)
