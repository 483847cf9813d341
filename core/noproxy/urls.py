"""Splitting URLs the way HTTP clients do, keeping the host as written."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080", "ws": "80", "wss": "443"}
_HOST_CHARS = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=%:\[\]-]*$")
# RFC 3986 lets userinfo carry sub-delims as written: credentials like ``o'brien:pa$(x)`` (code
# in PowerShell, which a reconciler must carry byte for byte) stay as they are.
USERINFO_SAFE = "!$&'()*+,;="


class URLError(ValueError):
    reason = "URLError"


@dataclass(frozen=True)
class Target:
    scheme: str  # lower-case
    host: str  # as written, IPv6 without brackets
    port: str  # explicit port, or ""
    bracketed: bool

    @property
    def effective_port(self) -> str:
        return self.port or DEFAULT_PORTS.get(self.scheme, "")

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        return parse_ip(self.host)


def parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP literal (IPv4-mapped IPv6 folded to IPv4), or None for a name."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def split_netloc(netloc: str) -> tuple[str, str, bool]:
    """(host, port, bracketed) from ``user@host:port``, like Go's URL.Hostname/Port."""
    hostport = netloc.rpartition("@")[2]
    host, port = hostport, ""
    colon = hostport.rfind(":")
    if colon != -1 and (hostport[colon + 1:] == "" or hostport[colon + 1:].isdigit()):
        host, port = hostport[:colon], hostport[colon + 1:]
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    return host, port, bracketed


def parse_target(url: str) -> Target:
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise URLError(f"invalid URL {url!r}: {exc}") from None
    if not parts.scheme or not parts.netloc:
        raise URLError(f"invalid URL {url!r}: an absolute URL with a host is required")
    host, port, bracketed = split_netloc(parts.netloc)
    if not host or not _HOST_CHARS.match(host):
        raise URLError(f"invalid URL {url!r}: bad host {host!r}")
    if port and not 0 < int(port) < 65536:
        raise URLError(f"invalid URL {url!r}: port {port} out of range")
    return Target(parts.scheme.lower(), host, port, bracketed)


def with_userinfo(url: str, auth: str) -> str:
    """``url`` (``scheme://host:port``, no credentials of its own) with ``auth`` as its userinfo:
    ``user:password`` split at the first ``:``, each part percent-encoded (UTF-8) except RFC 3986's
    unreserved characters and sub-delims, so ``:`` in the user and ``@ / ? # %``, spaces and the
    rest in either can neither end the authority early nor be read as something else."""
    scheme, separator, rest = url.partition("://")
    if not separator or "@" in rest.split("/", 1)[0]:
        # (the URL is not quoted: what it holds before an "@" may be a password)
        raise URLError("credentials go into a URL of the form scheme://host:port, without any of its own")
    user, colon, password = auth.partition(":")
    userinfo = quote(user, safe=USERINFO_SAFE) + (colon + quote(password, safe=USERINFO_SAFE) if colon else "")
    return f"{scheme}://{userinfo}@{rest}"
