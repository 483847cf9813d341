"""What keeps the run's own proxy, started for an existing cluster on an address the cluster's
nodes reach, from being an open proxy into the machine it runs on.

* ``ClientAllowList`` (option ``lab_allowed_clients``): only the instances' addresses may connect;
  anyone else's connection is closed at once.
* ``guarded_address``: a destination resolved through the system (no lab table, no hosts file)
  may not be a loopback, link-local, unspecified or multicast address, nor one of this machine's
  own — the CI runner's services and its cloud metadata endpoint are not the cluster's internet.
  A name the user mapped in ``--proxy-hosts`` is theirs to map anywhere.

The checks are pure functions over plain data; the addon reads the kernel's address tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import time
from pathlib import Path
from typing import Any

from mitmproxy import ctx
from mitmproxy.connection import Client

from proxyfleet.simulators.network import NetworkError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOCAL_ADDRESSES_TTL = 30.0  # seconds before the machine's own addresses are read again


class RefusedDestination(NetworkError):
    """A destination the run's proxy will not connect to."""

    reason = "RefusedDestination"


def parse_networks(text: str) -> list[Network]:
    """``10.0.5.21,10.0.6.0/24,fd00::5`` as networks (an address is a /32 or /128)."""
    return [ipaddress.ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip()]


def _plain(address: Address) -> Address:
    """An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) as the IPv4 address it is."""
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return mapped or address


def client_allowed(address: str, networks: list[Network]) -> bool:
    """Whether a client at ``address`` may use the proxy (an empty list allows everyone)."""
    if not networks:
        return True
    try:
        client = _plain(ipaddress.ip_address(address.split("%", 1)[0]))
    except ValueError:
        return False
    return any(client.version == network.version and client in network for network in networks)


def local_addresses(fib_trie: str, if_inet6: str) -> set[Address]:
    """This machine's own addresses, from Linux's ``/proc/net/fib_trie`` (every ``/32 host LOCAL``
    leaf, secondary addresses included) and ``/proc/net/if_inet6`` (one address per line, 32 hex
    digits first)."""
    found: set[Address] = set()
    last: str | None = None
    for line in fib_trie.splitlines():
        text = line.strip()
        if text.startswith(("|--", "+--")):
            last = text[3:].strip().split()[0]
        elif text.startswith("/32 host LOCAL") and last is not None:
            with contextlib.suppress(ValueError):
                found.add(ipaddress.IPv4Address(last))
    for line in if_inet6.splitlines():
        digits = line.split()[0] if line.split() else ""
        if len(digits) == 32:
            found.add(ipaddress.IPv6Address(int(digits, 16)))
    return found


def refusal(address: str, local: set[Address]) -> str | None:
    """Why the run's proxy will not connect to ``address`` (None: it will)."""
    try:
        found = _plain(ipaddress.ip_address(address.split("%", 1)[0]))
    except ValueError:
        return f"{address} is not an address"
    for kind, test in (("a loopback", found.is_loopback), ("a link-local", found.is_link_local),
                       ("an unspecified", found.is_unspecified), ("a multicast", found.is_multicast)):
        if test:
            return f"{found} is {kind} address"
    if found in local:
        return f"{found} is an address of the machine the proxy runs on"
    return None


def read_local_addresses() -> set[Address]:
    """The kernel's tables (Linux); elsewhere only what ``refusal`` finds by kind."""
    texts = []
    for path in ("/proc/net/fib_trie", "/proc/net/if_inet6"):
        try:
            texts.append(Path(path).read_text())
        except OSError:
            texts.append("")
    return local_addresses(*texts)


class DestinationGuard:
    """Resolves a name through the system and returns an address the proxy may connect to, or
    raises ``RefusedDestination`` naming why not; the proxy then connects to exactly that address
    (a second lookup could answer differently)."""

    def __init__(self) -> None:
        self._local: set[Address] = set()
        self._read = -LOCAL_ADDRESSES_TTL

    def _local_addresses(self) -> set[Address]:
        if time.monotonic() - self._read > LOCAL_ADDRESSES_TTL:
            self._local, self._read = read_local_addresses(), time.monotonic()
        return self._local

    async def address(self, host: str, port: int) -> str:
        try:
            answers = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise NetworkError(f"lookup {host}: {exc.strerror or exc}") from None
        local = self._local_addresses()
        reasons = []
        for answer in answers:
            address = str(answer[4][0])
            why = refusal(address, local)
            if why is None:
                return address
            reasons.append(why)
        raise RefusedDestination(f"refused {host}:{port}: {'; '.join(dict.fromkeys(reasons))} (the run's proxy "
                                 "reaches no address of its own machine; map the name in --proxy-hosts to allow it)")


class ClientAllowList:
    """Close every connection from an address outside ``lab_allowed_clients`` (empty: anyone)."""

    def __init__(self) -> None:
        self._networks: list[Network] = []

    def load(self, loader: Any) -> None:
        loader.add_option("lab_allowed_clients", str, "",
                          "Comma-separated addresses or networks allowed to use the proxy (empty: any).")

    def configure(self, updated: set[str]) -> None:
        if "lab_allowed_clients" in updated:
            self._networks = parse_networks(ctx.options.lab_allowed_clients)

    def client_connected(self, client: Client) -> None:
        if not client_allowed(str(client.peername[0]), self._networks):
            client.error = f"client {client.peername[0]} is not an instance of the cluster: refused"
