""".NET's ``HttpClient`` default proxy from the environment (``HttpEnvironmentProxy``).

Lower-case variables first (on Windows names are case-insensitive anyway); https falls back to
``ALL_PROXY`` but never to the http proxy; NO_PROXY entries: ``.x.com`` matches ``x.com`` and
its subdomains, a bare ``x.com`` only that exact host, ``*``, CIDR and ports are not
understood. A proxy without a scheme is ``http://`` on port 80.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from proxyfleet.core.noproxy.decisions import Decision
from proxyfleet.core.noproxy.urls import URLError, parse_target

_AUTHORITY = re.compile(r"^(?:(?P<userinfo>[^@]*)@)?(?P<host>\[[^\]]*\]|[^:/]*)(?::(?P<port>\d+))?")


def _first(env: Mapping[str, str], *names: str) -> tuple[str | None, str | None]:
    for name in names:
        value = env.get(name)
        if value:
            uri = uri_from_string(value)
            if uri is not None:
                return uri, name
    return None, None


def uri_from_string(value: str) -> str | None:
    """GetUriFromString: http:// is assumed; port 80 (443 for https://) when none is given."""
    scheme, rest, port = "http", value, "80"
    lowered = value.lower()
    if lowered.startswith("http://"):
        rest = value[7:]
    elif lowered.startswith("https://"):
        scheme, rest, port = "https", value[8:], "443"
    elif lowered.startswith(("socks4://", "socks4a://", "socks5://")):
        scheme, rest = value.split("://", 1)
        scheme, port = scheme.lower(), "1080"
    elif "://" in value:
        return None
    match = _AUTHORITY.match(rest)
    if match is None or not match.group("host"):
        return None
    userinfo = match.group("userinfo")
    credentials = f"{userinfo}@" if userinfo else ""
    return f"{scheme}://{credentials}{match.group('host')}:{match.group('port') or port}"


class DotnetRules:
    name = "dotnet"
    description = ".NET HttpClient (HttpEnvironmentProxy)"

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return Decision(url, self.name, "error", None, str(exc))
        http, http_name = _first(env, "http_proxy")
        if http is None and env.get("GATEWAY_INTERFACE") is None:
            http, http_name = _first(env, "HTTP_PROXY")
        https, https_name = _first(env, "https_proxy", "HTTPS_PROXY")
        if http is None or https is None:
            all_proxy, all_name = _first(env, "all_proxy", "ALL_PROXY")
            if http is None:
                http, http_name = all_proxy, all_name
            if https is None:
                https, https_name = all_proxy, all_name
        if http is None and https is None:
            return Decision(url, self.name, "direct", None, "no proxy variable is set")
        secure = target.scheme in ("https", "wss")
        proxy, variable = (https, https_name) if secure else (http, http_name)
        if proxy is None:
            return Decision(url, self.name, "direct", None,
                            f"no {'https' if secure else 'http'}_proxy or all_proxy is set")
        no_proxy = env.get("no_proxy") or env.get("NO_PROXY")
        host = f"[{target.host}]" if target.bracketed else target.host
        for entry in [e.strip() for e in (no_proxy or "").split(",") if e.strip()]:
            if entry.startswith("."):
                if host.lower() == entry[1:].lower() or host.lower().endswith(entry.lower()):
                    return Decision(url, self.name, "direct", None,
                                    f"NO_PROXY entry '{entry}' matches {host}")
            elif entry.lower() == host.lower():
                return Decision(url, self.name, "direct", None,
                                f"NO_PROXY entry '{entry}' is exactly {host}")
        return Decision(url, self.name, "proxy", proxy,
                        f"{variable} applies and no NO_PROXY entry matches", variable)
