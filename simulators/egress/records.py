"""What a node's clients saw of each request they made — the lab's own evidence of a route, which
no proxy's log has to confirm (DESIGN.md §10).

Every request a simulated client sends (containerd's pulls, curl.exe, Invoke-WebRequest, the
kubelet's API calls) leaves one ``EgressRecord``: where the client connected (the proxy it dialled,
by the name it used and the loopback endpoint that answered, or the destination itself), how it
asked (a CONNECT tunnel or an absolute-form request), whether it sent proxy credentials (never
which), what the proxy answered to the CONNECT (status, and the schemes a 407 offered), the issuer
of the certificate it was shown for the destination, and what came back. Records of one client
invocation share a ``session`` number, so a pull's later requests (blobs by digest) belong to the
request that named the probe.

A node keeps a bounded number of records (``EgressLog``); positions stay absolute, so a reader
that kept one knows what it has not read yet, and what was dropped.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

Mode = Literal["direct", "connect", "absolute-form"]
MAX_RECORDS = 2000  # per node: the judge reads a node's probes right after it makes them


@dataclass(frozen=True)
class EgressRecord:
    """One request as the node's client saw it (no credential, ever)."""

    time: dt.datetime
    source: str  # the node's address the connection left from
    client: str  # "containerd", "curl", "powershell", "kubelet"
    session: int  # one client invocation (a pull: HEAD, GET manifest, blobs)
    method: str
    url: str  # the virtual URL asked for
    mode: Mode
    proxy: str | None = None  # the proxy as the client dialled it: "proxy.corp.internal:3128"
    proxy_endpoint: str | None = None  # the loopback endpoint that answered for it
    local_port: int | None = None  # the connection's source port (to the proxy, or to the destination)
    credentials_sent: bool = False
    connect_status: int | None = None  # what the proxy answered to the CONNECT
    connect_reason: str | None = None
    proxy_authenticate: tuple[str, ...] = ()  # the schemes a 407 offered (Basic, NTLM, Negotiate …)
    issuer: str | None = None  # of the certificate the destination's TLS showed (the proxy's CA when it intercepts)
    status: int | None = None  # the response's (absolute-form through a proxy: whoever answered)
    error_kind: str | None = None  # EgressError.kind when the request failed
    error: str | None = None

    @property
    def through_proxy(self) -> bool:
        return self.mode != "direct"

    @property
    def host(self) -> str:
        """The destination's host as the URL names it (lower case, IPv6 without brackets)."""
        return (urlsplit(self.url).hostname or "").lower()


@dataclass
class EgressLog:
    """A node's records, oldest dropped past ``limit``; ``position`` counts every record ever kept."""

    limit: int = MAX_RECORDS
    records: list[EgressRecord] = field(default_factory=list)
    dropped: int = 0
    _sessions: Iterator[int] = field(default_factory=itertools.count)

    def new_session(self) -> int:
        return next(self._sessions)

    def add(self, record: EgressRecord) -> None:
        self.records.append(record)
        if len(self.records) > self.limit:
            excess = len(self.records) - self.limit
            del self.records[:excess]
            self.dropped += excess

    @property
    def position(self) -> int:
        return self.dropped + len(self.records)

    def since(self, position: int) -> list[EgressRecord]:
        """The records kept after ``position`` (what was dropped meanwhile is gone)."""
        return self.records[max(0, position - self.dropped):]
