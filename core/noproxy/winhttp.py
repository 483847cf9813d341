"""Windows' WinHTTP proxy (``netsh winhttp set proxy proxy-server=… bypass-list=…``).

It reads no environment variables. ``proxy-server`` is ``host:port`` or per-scheme
``http=host:port;https=host:port``; ``bypass-list`` is ``;``-separated, ``*`` is a wildcard
only at the left of an entry, ``<local>`` means host names without a dot.
"""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.core.noproxy.decisions import Decision
from proxyfleet.core.noproxy.urls import URLError, parse_ip, parse_target

PROXY_SERVER = "proxy-server"
BYPASS_LIST = "bypass-list"


def proxy_for_scheme(proxy_server: str, scheme: str) -> str | None:
    entries = [e.strip() for e in proxy_server.replace(" ", ";").split(";") if e.strip()]
    plain = None
    for entry in entries:
        if "=" in entry:
            key, _, value = entry.partition("=")
            if key.strip().lower() == scheme:
                return value.strip()
        elif plain is None:
            plain = entry
    return plain


def bypass_match(host: str, bypass_list: str) -> str | None:
    for raw in bypass_list.split(";"):
        entry = raw.strip()
        if not entry:
            continue
        lowered, name = entry.lower(), host.lower()
        if lowered == "<local>":
            if "." not in name and parse_ip(name) is None:
                return entry
            continue
        if lowered.startswith("*"):
            if "*" in lowered[1:]:
                continue  # only a leading wildcard is understood
            if name.endswith(lowered[1:]):
                return entry
            continue
        if "*" in lowered:
            continue
        if name == lowered:
            return entry
    return None


class WinHttpRules:
    name = "winhttp"
    description = "Windows WinHTTP (netsh winhttp proxy-server and bypass-list; no env vars)"

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        try:
            target = parse_target(url)
        except URLError as exc:
            return Decision(url, self.name, "error", None, str(exc))
        server = env.get(PROXY_SERVER, "")
        if not server:
            return Decision(url, self.name, "direct", None,
                            "no WinHTTP proxy-server is set (WinHTTP ignores HTTP(S)_PROXY)")
        proxy = proxy_for_scheme(server, target.scheme)
        if proxy is None:
            return Decision(url, self.name, "direct", None,
                            f"proxy-server has no entry for {target.scheme}")
        matched = bypass_match(target.host, env.get(BYPASS_LIST, ""))
        if matched is not None:
            return Decision(url, self.name, "direct", None, f"bypass-list entry '{matched}' matches")
        if "://" not in proxy:
            proxy = "http://" + proxy
        return Decision(url, self.name, "proxy", proxy, "proxy-server applies", PROXY_SERVER)
