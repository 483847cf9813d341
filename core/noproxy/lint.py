"""Warn about proxy settings that clients read differently, and about what a cluster needs.

Every finding names the entry, what goes wrong and for which clients, so a customer's
``NO_PROXY`` can be fixed before it becomes a support case.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from proxyfleet.core.noproxy.decisions import redact_url
from proxyfleet.core.noproxy.urls import parse_ip

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    entry: str
    message: str
    clients: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {"severity": self.severity, "entry": self.entry, "message": self.message,
                "clients": list(self.clients)}


@dataclass
class ClusterFacts:
    """What a cluster's nodes must reach directly (all optional)."""

    api_hosts: list[str] = field(default_factory=list)
    service_networks: list[str] = field(default_factory=list)
    cluster_networks: list[str] = field(default_factory=list)
    machine_networks: list[str] = field(default_factory=list)

    @property
    def given(self) -> bool:
        return bool(self.api_hosts or self.service_networks or self.cluster_networks
                    or self.machine_networks)


def _value(env: Mapping[str, str], upper: str) -> str:
    return env.get(upper) or env.get(upper.lower()) or ""


def _entry_findings(entry: str) -> list[Finding]:
    found: list[Finding] = []
    host = entry
    if entry == "*":
        return [Finding("warning", entry, "'*' inside a list is honoured only by Go; curl, Python "
                                          "and .NET ignore it and keep proxying",
                        ("curl", "python-urllib", "python-requests", "dotnet"))]
    if entry.startswith("*."):
        found.append(Finding("warning", entry, "only Go understands '*.'; curl, Python and .NET never "
                                               f"match it — write '{entry[1:]}' instead",
                             ("curl", "python-urllib", "python-requests", "dotnet")))
    elif "*" in entry:
        found.append(Finding("error", entry, "a '*' inside a name is not a wildcard for any client",
                             ("go", "curl", "python-urllib", "python-requests", "dotnet")))
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return [*found, Finding("error", entry, "not a valid CIDR; no client matches it")]
        clients = ["python-urllib", "dotnet"] + (["curl", "python-requests"]
                                                 if network.version == 6 else [])
        return [*found, Finding("warning", entry, f"CIDR {network} is not understood by "
                                                  f"{', '.join(clients)}: they keep proxying "
                                                  "addresses inside it", tuple(clients))]
    if ":" in entry and parse_ip(entry) is None and parse_ip(entry.strip("[]")) is None:
        host, _, port = entry.rpartition(":")
        found.append(Finding("warning", entry,
                             f"the port :{port} makes curl and .NET ignore this entry; Go needs the "
                             "URL's port (default ports included) to be "
                             f"{port}; Python only matches URLs that spell out :{port}",
                             ("curl", "dotnet", "go", "python-urllib")))
    if host.startswith(".") and "." in host[1:]:
        found.append(Finding("info", entry, f"Go matches only subdomains of {host[1:]}, not "
                                            f"{host[1:]} itself; curl, Python and .NET match both",
                             ("go",)))
    elif parse_ip(host) is None and "." in host and not host.startswith("*"):
        found.append(Finding("info", entry, f".NET matches {host} exactly, not its subdomains; "
                                            f"write '.{host}' for .NET to cover both", ("dotnet",)))
    if host.endswith(".") and len(host) > 1:
        found.append(Finding("info", entry, "a trailing dot is dropped by curl only"))
    return found


def _covered(network: str, entries: Sequence[str]) -> bool:
    target = ipaddress.ip_network(network, strict=False)
    for entry in entries:
        try:
            candidate = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue
        if candidate.version == target.version and target.subnet_of(candidate):  # type: ignore[arg-type]
            return True
    return False


def lint(env: Mapping[str, str], facts: ClusterFacts | None = None) -> list[Finding]:
    """All findings for a set of proxy variables (and, optionally, a cluster's needs)."""
    facts = facts or ClusterFacts()
    findings: list[Finding] = []
    for upper in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        lower = upper.lower()
        if env.get(upper) and env.get(lower) and env[upper] != env[lower]:
            findings.append(Finding(
                "error", f"{upper}/{lower}",
                f"{upper} and {lower} differ: Go reads {upper}, curl, Python and .NET read {lower} — "
                "the same node will use different settings per program"))
    if env.get("HTTP_PROXY") and not env.get("http_proxy"):
        findings.append(Finding("warning", "HTTP_PROXY",
                                "curl never reads HTTP_PROXY in upper case; set http_proxy too",
                                ("curl",)))
    if _value(env, "HTTP_PROXY") and not _value(env, "HTTPS_PROXY"):
        findings.append(Finding("error", "HTTPS_PROXY",
                                "HTTP_PROXY is set but HTTPS_PROXY is not: no client sends https "
                                "traffic (image pulls, the API) through the proxy"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        value = _value(env, name)
        if value and "://" not in value:
            findings.append(Finding("warning", f"{name}={redact_url(value)}",
                                    "no scheme: Go, Python requests and .NET assume http://, urllib "
                                    "uses the request's scheme, curl assumes http:// and port 1080 "
                                    "when none is given"))
        if value and "@" in value.split("://", 1)[-1].split("/", 1)[0]:
            findings.append(Finding("info", f"{name}={redact_url(value)}",
                                    "the proxy URL carries credentials; proxyfleet redacts them in "
                                    "every report, but check where else this value is logged"))
    no_proxy = _value(env, "NO_PROXY")
    if ";" in no_proxy:
        findings.append(Finding("error", no_proxy,
                                "';' separates WinHTTP/WinINet bypass lists, not NO_PROXY: every "
                                "client reads this whole value as one entry"))
    raw_entries = no_proxy.split(",") if no_proxy else []
    for raw in raw_entries:
        stripped = raw.strip()
        if not stripped:
            findings.append(Finding("info", repr(raw), "empty entry (doubled or trailing comma)"))
            continue
        if " " in stripped or "\t" in stripped:
            findings.append(Finding("error", stripped,
                                    "blanks separate entries only for curl (deprecated); Go and "
                                    "Python read this as one entry that matches nothing"))
            continue
        findings.extend(_entry_findings(stripped))
    entries = [r.strip() for r in raw_entries if r.strip()]
    if no_proxy == "*":
        findings.append(Finding("warning", "*", ".NET does not support '*' and keeps proxying",
                                ("dotnet",)))
    if _value(env, "HTTPS_PROXY") and not any(e in ("localhost", "127.0.0.1") for e in entries) \
            and no_proxy != "*":
        findings.append(Finding("info", "localhost", "curl, Python and .NET proxy localhost and "
                                                     "127.0.0.1 unless listed (Go never does)"))
    if facts.given or entries:
        lowered = [e.lower() for e in entries]
        for suffix in (".svc", ".cluster.local"):
            if not facts.given:
                break
            if not any(e in (suffix, suffix[1:], "*" + suffix) for e in lowered):
                findings.append(Finding("error", suffix, f"missing: in-cluster names ({suffix}) would "
                                                         "be sent to the proxy"))
        for host in facts.api_hosts:
            if not any(host.lower() == e or host.lower().endswith("." + e.lstrip(".")) for e in lowered):
                findings.append(Finding("error", host, "missing: the kubelet would reach the API "
                                                       "server through the proxy, whose certificate it "
                                                       "does not trust; the node goes NotReady"))
        for label, networks in (("service network", facts.service_networks),
                                ("cluster network", facts.cluster_networks),
                                ("machine network", facts.machine_networks)):
            for network in networks:
                if not _covered(network, entries):
                    findings.append(Finding("error", network, f"missing: the {label} {network} is "
                                                              "not in NO_PROXY"))
    return findings
