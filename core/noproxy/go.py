"""Go's ``http.ProxyFromEnvironment`` (``golang.org/x/net/http/httpproxy``), and client-go's
CIDR wrapper around it (``k8s.io/apimachinery/pkg/util/net.NewProxierWithNoProxyCIDR``).

containerd pulls images and the kubelet talks to the API server with these rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from proxyfleet.core.noproxy.decisions import Decision
from proxyfleet.core.noproxy.urls import URLError, parse_ip, parse_target

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Go 1.23.7 (x/net 0.36) stopped matching IP-literal hosts against domain entries.
DOMAIN_SKIPS_IP_LITERALS = (1, 23, 7)


def _getenv_any(env: Mapping[str, str], *names: str) -> tuple[str, str | None]:
    """Go's getEnvAny: the first name with a non-empty value wins."""
    for name in names:
        value = env.get(name, "")
        if value:
            return value, name
    return "", None


def split_host_port(text: str) -> tuple[str, str] | None:
    """``net.SplitHostPort``; None where Go returns an error."""
    colon = text.rfind(":")
    if colon < 0:
        return None
    start, end_search = 0, 0
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or end + 1 == len(text) or end + 1 != colon:
            return None
        host = text[1:end]
        start, end_search = 1, end + 1
    else:
        host = text[:colon]
        if ":" in host:
            return None
    if "[" in text[start:] or "]" in text[end_search:]:
        return None
    return host, text[colon + 1:]


def parse_proxy(value: str) -> str | None:
    """Go's parseProxy: a value without a known scheme gets ``http://``. None if unusable."""
    if not value:
        return None
    try:
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https", "socks5"):
        value = "http://" + value
        try:
            parts = urlsplit(value)
        except ValueError:
            return None
    if not parts.netloc:
        return None
    return value


@dataclass(frozen=True)
class _Matchers:
    everything: bool = False
    cidrs: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = field(default_factory=list)
    ips: list[tuple[IPAddress, str, str]] = field(default_factory=list)  # ip, port, entry
    domains: list[tuple[str, str, bool, str]] = field(default_factory=list)  # suffix, port, matchHost, entry


def parse_no_proxy(value: str) -> _Matchers:
    """The matchers httpproxy's config.init builds from NO_PROXY."""
    matchers = _Matchers()
    for raw in value.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return _Matchers(everything=True)
        if "/" in entry:
            try:
                matchers.cidrs.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
        split = split_host_port(entry)
        if split is not None:
            host, port = split
            if not host:
                continue
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]
        else:
            host, port = entry, ""
        ip = parse_ip(host)
        if ip is not None:
            matchers.ips.append((ip, port, raw.strip()))
            continue
        if not host:
            continue
        if host.startswith("*."):
            host = host[1:]
        match_host = False
        if not host.startswith("."):
            match_host = True
            host = "." + host
        matchers.domains.append((host, port, match_host, raw.strip()))
    return matchers


class GoRules:
    """``http.ProxyFromEnvironment`` as in the given Go version (default: current)."""

    name = "go"
    description = "Go net/http ProxyFromEnvironment (containerd, kubelet image pulls)"

    # The variables a decision reads: it is a pure function of their values and the URL, so each
    # distinct pair is decided once (a kubelet asks again every lease renewal, on every node).
    READS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD")
    MEMO_LIMIT = 4096

    def __init__(self, version: tuple[int, ...] = (1, 24, 0)) -> None:
        self.version = version
        self._memo: dict[tuple[str, ...], Decision] = {}

    def _result(self, url: str, kind: str, proxy: str | None, reason: str,
                variable: str | None = None) -> Decision:
        return Decision(url, self.name, kind, proxy, reason, variable)  # type: ignore[arg-type]

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        key = (url, *(env.get(name, "") for name in self.READS))
        decision = self._memo.get(key)
        if decision is None:
            if len(self._memo) >= self.MEMO_LIMIT:
                self._memo.clear()
            decision = self._memo[key] = self._decide(env, url)
        return decision

    def _decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return self._result(url, "error", None, str(exc))
        https_value, https_name = _getenv_any(env, "HTTPS_PROXY", "https_proxy")
        http_value, http_name = _getenv_any(env, "HTTP_PROXY", "http_proxy")
        no_proxy, no_name = _getenv_any(env, "NO_PROXY", "no_proxy")
        if target.scheme == "https":
            proxy, variable = parse_proxy(https_value), https_name
            if proxy is None:
                missing = ("no HTTPS_PROXY or https_proxy is set; Go never falls back to HTTP_PROXY"
                           if not https_value else f"{https_name} is not a usable proxy URL; Go ignores it")
                return self._result(url, "direct", None, missing)
        elif target.scheme == "http":
            proxy, variable = parse_proxy(http_value), http_name
            if proxy is None:
                missing = ("no HTTP_PROXY or http_proxy is set" if not http_value
                           else f"{http_name} is not a usable proxy URL; Go ignores it")
                return self._result(url, "direct", None, missing)
            if env.get("REQUEST_METHOD", ""):
                return self._result(url, "error", None,
                                    "refusing to use HTTP_PROXY value in CGI environment; see "
                                    "golang.org/s/cgihttpproxy")
        else:
            return self._result(url, "direct", None, f"Go uses no proxy for {target.scheme}: URLs")
        bypass = self._bypass(target.host, target.effective_port, no_proxy, no_name)
        if bypass is not None:
            return self._result(url, "direct", None, bypass)
        return self._result(url, "proxy", proxy, f"{variable} applies and no NO_PROXY entry matches",
                            variable)

    def _bypass(self, host: str, port: str, no_proxy: str, no_name: str | None) -> str | None:
        """useProxy: the reason to go direct, or None to use the proxy."""
        if host == "localhost":
            return "Go always connects to localhost directly"
        ip = parse_ip(host)
        if ip is not None and ip.is_loopback:
            return "Go always connects to loopback addresses directly"
        name = host.strip().lower()
        matchers = parse_no_proxy(no_proxy)
        if matchers.everything:
            return f"{no_name} contains '*', which matches every host"
        if ip is not None:
            for network in matchers.cidrs:
                if ip.version == network.version and ip in network:
                    return f"{no_name} entry {network} contains {ip}"
            for entry_ip, entry_port, entry in matchers.ips:
                if entry_ip == ip and (not entry_port or entry_port == port):
                    return f"{no_name} entry '{entry}' is this address"
        if ip is not None and self.version >= DOMAIN_SKIPS_IP_LITERALS:
            return None
        for suffix, entry_port, match_host, entry in matchers.domains:
            matches = name.endswith(suffix) or (match_host and name == suffix[1:])
            if matches and (not entry_port or entry_port == port):
                return f"{no_name} entry '{entry}' matches {name}"
        return None


class ClientGoRules(GoRules):
    """The kubelet's API client: CIDR entries of NO_PROXY checked first, then Go's rules."""

    name = "client-go"
    description = "client-go (kubelet and operators talking to the Kubernetes API)"

    def _decide(self, env: Mapping[str, str], url: str) -> Decision:
        no_proxy = env.get("NO_PROXY", "") or env.get("no_proxy", "")
        try:
            target = parse_target(url)
        except URLError as exc:
            return self._result(url, "error", None, str(exc))
        ip = parse_ip(target.host)
        if ip is not None:
            for rule in no_proxy.split(","):
                try:
                    network = ipaddress.ip_network(rule, strict=False) if "/" in rule else None
                except ValueError:
                    network = None
                if network is not None and ip.version == network.version and ip in network:
                    return self._result(url, "direct", None,
                                        f"NO_PROXY CIDR {network} contains {ip} (client-go)")
        return super()._decide(env, url)
