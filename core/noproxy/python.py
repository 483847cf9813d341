"""Python's two common readings: ``urllib.request`` (getproxies_environment,
proxy_bypass_environment) and ``requests`` (should_bypass_proxies, select_proxy).

Older requests releases matched NO_PROXY entries as bare suffixes (``example.com`` also
matched ``notexample.com``); current ones (verified against 2.34) require a dot boundary, as
modelled here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from proxyfleet.core.noproxy.decisions import Decision
from proxyfleet.core.noproxy.urls import URLError, parse_ip, parse_target


def environment_proxies(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """getproxies_environment: {scheme: (value, variable)}; lower-case names win, and an empty
    lower-case value removes the scheme. With REQUEST_METHOD set, upper-case HTTP_PROXY is
    dropped (CGI)."""
    proxies: dict[str, tuple[str, str]] = {}
    for name, value in env.items():
        lowered = name.lower()
        if value and lowered.endswith("_proxy"):
            proxies[lowered[:-6]] = (value, name)
    if "REQUEST_METHOD" in env:
        proxies.pop("http", None)
    for name, value in env.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name.lower()[:-6]] = (value, name)
            else:
                proxies.pop(name.lower()[:-6], None)
    return proxies


def urllib_bypass(host: str, proxies: Mapping[str, tuple[str, str]]) -> str | None:
    """proxy_bypass_environment: the matching entry, or None. ``host`` may carry ``:port``."""
    if "no" not in proxies:
        return None
    no_proxy, variable = proxies["no"]
    if no_proxy == "*":
        return f"{variable} is '*'"
    host = host.lower()
    hostonly = host
    if ":" in host and not host.startswith("["):
        candidate, _, port = host.rpartition(":")
        if port.isdigit():
            hostonly = candidate
    for raw in no_proxy.split(","):
        name = raw.strip()
        if not name:
            continue
        name = name.lstrip(".").lower()
        if hostonly == name or host == name or hostonly.endswith("." + name) \
                or host.endswith("." + name):
            return f"{variable} entry '{raw.strip()}' matches {host}"
    return None


def _proxy_url(value: str, default_scheme: str) -> str:
    return value if "://" in value else f"{default_scheme}://{value}"


class PythonUrllibRules:
    name = "python-urllib"
    description = "Python urllib.request (and everything built on ProxyHandler)"

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return Decision(url, self.name, "error", None, str(exc))
        proxies = environment_proxies(env)
        if target.scheme not in proxies:
            return Decision(url, self.name, "direct", None,
                            f"no {target.scheme}_proxy is set (urllib has no fallback)")
        value, variable = proxies[target.scheme]
        netloc = f"[{target.host}]" if target.bracketed else target.host
        host = netloc + (f":{target.port}" if target.port else "")
        bypass = urllib_bypass(host, proxies)
        if bypass is not None:
            return Decision(url, self.name, "direct", None, bypass)
        return Decision(url, self.name, "proxy", _proxy_url(value, target.scheme),
                        f"{variable} applies and no no_proxy entry matches", variable)


def _in_cidr(address: str, entry: str) -> bool:
    try:
        network = ipaddress.IPv4Network(entry, strict=False)
        mask_ok = 1 <= int(entry.split("/", 1)[1]) <= 32
        return mask_ok and ipaddress.IPv4Address(address) in network
    except (ValueError, IndexError):
        return False


class PythonRequestsRules:
    name = "python-requests"
    description = "Python requests (should_bypass_proxies + select_proxy)"

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return Decision(url, self.name, "error", None, str(exc))
        hostname = target.host.lower()
        no_name = "no_proxy"
        no_proxy = env.get("no_proxy") or None
        if no_proxy is None:
            no_name, no_proxy = "NO_PROXY", env.get("NO_PROXY") or None
        if no_proxy:
            entries = [h for h in no_proxy.replace(" ", "").split(",") if h]
            is_ipv4 = isinstance(parse_ip(hostname), ipaddress.IPv4Address) and not target.bracketed
            if is_ipv4:
                for entry in entries:
                    if "/" in entry and _in_cidr(hostname, entry):
                        return Decision(url, self.name, "direct", None,
                                        f"{no_name} CIDR {entry} contains {hostname}")
                    if "/" not in entry and hostname == entry:
                        return Decision(url, self.name, "direct", None,
                                        f"{no_name} entry '{entry}' is this address")
            else:
                with_port = hostname + (f":{target.port}" if target.port else "")
                for entry in entries:
                    bare = entry.lstrip(".")
                    if hostname == bare or with_port == bare or hostname.endswith("." + bare) \
                            or with_port.endswith("." + bare):
                        return Decision(url, self.name, "direct", None,
                                        f"{no_name} entry '{entry}' matches {with_port}")
        proxies = environment_proxies(env)
        bypass = urllib_bypass(hostname, proxies)
        if bypass is not None:
            return Decision(url, self.name, "direct", None, bypass)
        for key in (target.scheme, "all"):
            if key in proxies:
                value, variable = proxies[key]
                return Decision(url, self.name, "proxy", _proxy_url(value, "http"),
                                f"{variable} applies and no no_proxy entry matches", variable)
        return Decision(url, self.name, "direct", None, f"no {target.scheme}_proxy or all_proxy is set")
