"""curl's proxy environment (``lib/url.c`` detect_proxy, ``lib/noproxy.c``), as curl 7.86+.

Lower-case variables first; ``HTTP_PROXY`` in upper case is never read (a CGI safety rule);
https does not fall back to the http proxy but to ``ALL_PROXY``; ``*`` only as the whole
value; entries match the host and its subdomains, a leading dot is ignored, ports never match;
CIDR entries match IPv4-literal hosts (IPv6 hosts are compared as text); blanks separate
entries too (deprecated, with a warning).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from proxyfleet.core.noproxy.decisions import Decision
from proxyfleet.core.noproxy.urls import URLError, parse_target

DEFAULT_PROXY_PORT = "1080"
DEFAULT_HTTPS_PROXY_PORT = "443"


def _getenv(env: Mapping[str, str], name: str) -> str | None:
    """curl_getenv: unset and empty are the same."""
    value = env.get(name)
    return value if value else None


def normalise_proxy(value: str) -> str | None:
    """The proxy curl connects to: no scheme means an HTTP proxy; no port means 1080."""
    text = value.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not parts.hostname:
        return None
    if port is None:
        default = DEFAULT_HTTPS_PROXY_PORT if scheme == "https" else DEFAULT_PROXY_PORT
        host = parts.netloc + ":" + default
        return f"{scheme}://{host}"
    return f"{scheme}://{parts.netloc}"


def _tokens(no_proxy: str) -> tuple[list[str], bool]:
    """Split a no_proxy value like Curl_check_noproxy walks it: commas and blanks separate.

    Returns the tokens and whether blanks were used as separators (curl warns about that).
    """
    tokens: list[str] = []
    space_separated = False
    i, n = 0, len(no_proxy)
    while i < n:
        while i < n and no_proxy[i] in " \t":
            i += 1
        start = i
        while i < n and no_proxy[i] not in " \t,":
            i += 1
        if i > start:
            tokens.append(no_proxy[start:i])
        while i < n and no_proxy[i] in " \t":
            i += 1
        if i < n and no_proxy[i] != ",":
            space_separated = True
            continue
        while i < n and no_proxy[i] == ",":
            i += 1
    return tokens, space_separated


def check_no_proxy(host: str, no_proxy: str | None) -> str | None:
    """The matching entry (as written), or None."""
    if not host or not no_proxy:
        return None
    if no_proxy == "*":
        return "*"
    # curl stores an IPv6 host without its brackets, so only IPv4 literals take the address
    # path; IPv6 hosts are compared as text (CIDR entries never match them). Verified against
    # Debian's curl 7.88.
    try:
        ip: ipaddress.IPv4Address | None = ipaddress.IPv4Address(host)
    except ValueError:
        ip = None
    name = host[:-1] if ip is None and host.endswith(".") else host
    for token in _tokens(no_proxy)[0]:
        if ip is None:
            pattern = token[:-1] if token.endswith(".") else token
            pattern = pattern[1:] if pattern.startswith(".") else pattern
            if not pattern:
                continue
            lowered, hostname = pattern.lower(), name.lower()
            if lowered == hostname or (len(lowered) < len(hostname)
                                       and hostname.endswith("." + lowered)):
                return token
            continue
        address, _, bits = token.partition("/")
        try:
            network_ip = ipaddress.IPv4Address(address)
            prefix = int(bits) if bits.isdigit() else 0
            if prefix > 32:
                continue
            network = ipaddress.IPv4Network(f"{network_ip}/{prefix or 32}", strict=False)
        except ValueError:
            continue
        if ip in network:
            return token
    return None


class CurlRules:
    name = "curl"
    description = "curl and curl.exe (7.86 and later)"

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return Decision(url, self.name, "error", None, str(exc))
        no_proxy_name = "no_proxy"
        no_proxy = _getenv(env, "no_proxy")
        if no_proxy is None:
            no_proxy_name, no_proxy = "NO_PROXY", _getenv(env, "NO_PROXY")
        matched = check_no_proxy(target.host, no_proxy)
        if matched is not None:
            why = ("is '*', which matches every host" if matched == "*" and no_proxy == "*"
                   else f"entry '{matched}' matches {target.host}")
            return Decision(url, self.name, "direct", None, f"{no_proxy_name} {why}")
        variable = f"{target.scheme}_proxy"
        value = _getenv(env, variable)
        if value is None and variable != "http_proxy":
            variable = variable.upper()
            value = _getenv(env, variable)
        if value is None:
            for variable in ("all_proxy", "ALL_PROXY"):
                value = _getenv(env, variable)
                if value is not None:
                    break
        if value is None:
            note = " (curl never reads HTTP_PROXY in upper case)" if (
                target.scheme == "http" and _getenv(env, "HTTP_PROXY")) else ""
            return Decision(url, self.name, "direct", None,
                            f"no {target.scheme}_proxy or all_proxy is set{note}")
        proxy = normalise_proxy(value)
        if proxy is None:
            return Decision(url, self.name, "error", None, f"{variable} is not a usable proxy URL")
        if no_proxy and _tokens(no_proxy)[1]:
            reason = (f"{variable} applies; {no_proxy_name} is blank-separated, which curl reads "
                      "with a deprecation warning")
        else:
            reason = f"{variable} applies and no no_proxy entry matches"
        return Decision(url, self.name, "proxy", proxy, reason, variable)
