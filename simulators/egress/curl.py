"""curl as a node runs it, on any node kind: its options, its proxy rules (``core.noproxy``'s
``curl``: lower-case ``http_proxy`` only, ``HTTPS_PROXY`` in either case), ``--proxy`` and
``--noproxy``, redirects, ``--write-out``, and its failures in its own words — which depend on
the TLS library it was built with (``TlsLibrary``: Schannel on Windows, OpenSSL on Linux; the
OpenSSL wording checked against Debian's curl 7.88.1).

The node kind supplies the invocation (``CurlInvocation``): the process environment as curl reads
it (a case-insensitive mapping on Windows, a plain one on Linux), the trust, the node's address
and egress log, and how a named file is read and written on the node.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from proxyfleet.core.noproxy import CLIENTS, redact_url
from proxyfleet.simulators.egress.client import EgressError, EgressSession, Trace, trust_context
from proxyfleet.simulators.network import LabNetwork

_SHORT_FLAGS = {"s": "silent", "S": "show-error", "v": "verbose", "I": "head", "L": "location",
                "k": "insecure", "f": "fail", "i": "include"}
_SHORT_VALUES = {"o": "output", "w": "write-out", "x": "proxy", "X": "request", "H": "header",
                 "m": "max-time", "U": "proxy-user"}
_LONG_FLAGS = {"silent", "show-error", "verbose", "head", "location", "insecure", "fail", "include"}
_LONG_VALUES = {"output", "write-out", "noproxy", "proxy", "proxy-cacert", "request", "header",
                "max-time", "connect-timeout", "proxy-user", "cacert"}
USAGE_HINT = "curl: try 'curl --help' for more information\n"


@dataclass(frozen=True)
class TlsLibrary:
    """How a curl build's TLS library words its failures."""

    untrusted: str  # (60) the certificate's issuer is not trusted
    wrong_name: str  # (60) the certificate does not name the host ({host})
    handshake_reset: tuple[int, str]  # the connection reset during the handshake ({host}, {port})
    read_reset: str  # (56) reset while reading a plain-HTTP response
    proxy_reset: tuple[int, str] | None  # reset by the proxy; None: worded as a failed connect
    verify_help: str = ""  # what curl adds after a (60)


SCHANNEL = TlsLibrary(
    untrusted=("schannel: SEC_E_UNTRUSTED_ROOT (0x80090325) - The certificate chain was issued by an authority "
               "that is not trusted."),
    wrong_name=("schannel: SNI or certificate check failed: SEC_E_WRONG_PRINCIPAL (0x80090322) - The target "
                "principal name is incorrect."),
    handshake_reset=(35, "schannel: failed to receive handshake, SSL/TLS connection failed"),
    read_reset="Recv failure: Connection was reset",
    proxy_reset=None)
OPENSSL = TlsLibrary(
    untrusted="SSL certificate problem: unable to get local issuer certificate",
    wrong_name="SSL: no alternative certificate subject name matches target host name '{host}'",
    handshake_reset=(35, "Recv failure: Connection reset by peer"),
    read_reset="Recv failure: Connection reset by peer",
    proxy_reset=(56, "Recv failure: Connection reset by peer"),
    verify_help=("More details here: https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy "
                 "of the server and therefore could not\nestablish a secure connection to it. To learn more about "
                 "this situation and\nhow to fix it, please visit the web page mentioned above.\n"))


@dataclass(frozen=True)
class CurlBuild:
    """One curl build: what ``--version`` says, its User-Agent, its TLS library."""

    version: str
    user_agent: str
    tls: TlsLibrary


WINDOWS_CURL = CurlBuild("curl 8.7.1 (Windows) libcurl/8.7.1 Schannel zlib/1.3 WinIDN", "curl/8.7.1", SCHANNEL)
LINUX_CURL = CurlBuild("curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1 OpenSSL/3.0.15 zlib/1.2.13",
                       "curl/7.88.1", OPENSSL)


class CurlUsage(Exception):
    """An option curl does not know, or one missing its value (curl's own words)."""


def parse_curl_arguments(args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """curl's options and URLs: short options bundled (``-sSf``), a short option's value joined
    or the next word, ``--`` ending the options."""
    options: dict[str, Any] = {"header": []}
    urls: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":  # curl's end of options: every argument after it is a URL
            urls.extend(args[i + 1:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name = arg[2:]
            if name in _LONG_FLAGS:
                options[name] = True
            elif name in _LONG_VALUES:
                if i + 1 >= len(args):
                    raise CurlUsage(f"option {arg}: requires parameter")
                i += 1
                if name == "header":
                    options["header"].append(args[i])
                else:
                    options[name] = args[i]
            else:
                raise CurlUsage(f"option {arg}: is unknown")
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for position, letter in enumerate(letters):
                if letter in _SHORT_FLAGS:
                    options[_SHORT_FLAGS[letter]] = True
                elif letter in _SHORT_VALUES:
                    value = letters[position + 1:]
                    if not value:
                        if i + 1 >= len(args):
                            raise CurlUsage(f"option -{letter}: requires parameter")
                        i += 1
                        value = args[i]
                    key = _SHORT_VALUES[letter]
                    if key == "header":
                        options["header"].append(value)
                    else:
                        options[key] = value
                    break
                else:
                    raise CurlUsage(f"option -{letter}: is unknown")
        else:
            urls.append(arg)
        i += 1
    return options, urls


def curl_failure(error: EgressError, host: str, port: int, proxy: str | None, tls: TlsLibrary,
                 scheme: str = "https") -> tuple[int, str]:
    """A failed request as curl reports it: (exit status, message)."""
    proxy_parts = urlsplit(proxy) if proxy else None
    if error.kind.startswith("proxy-tls"):  # the TLS to an https:// proxy itself: curl says the same
        proxy_host = proxy_parts.hostname if proxy_parts and proxy_parts.hostname else host
        return curl_failure(EgressError(error.kind.removeprefix("proxy-"), error.detail), proxy_host,
                            port, None, tls)
    if error.kind == "dns":
        return 6, f"Could not resolve host: {host}"
    if error.kind == "proxy-dns":
        return 5, f"Could not resolve proxy: {proxy_parts.hostname if proxy_parts else ''}"
    if error.kind == "refused":
        return 7, f"Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server"
    if error.kind == "proxy-reset" and tls.proxy_reset is not None:
        return tls.proxy_reset
    if error.kind in ("proxy-refused", "proxy-reset") and proxy_parts is not None:
        return 7, (f"Failed to connect to {proxy_parts.hostname} port {proxy_parts.port} after 0 ms: "
                   "Couldn't connect to server")
    if error.kind == "proxy-status":
        return 56, f"CONNECT tunnel failed, response {error.status}"
    if error.kind == "tls-unknown-authority":
        return 60, tls.untrusted
    if error.kind == "tls-hostname":
        return 60, tls.wrong_name.format(host=host)
    if error.kind == "reset" and scheme == "http":  # no TLS to fail: the reset comes on the read
        return 56, tls.read_reset
    if error.kind in ("reset", "tls"):
        code, text = tls.handshake_reset
        return code, text.format(host=host, port=port)
    if error.kind == "timeout":
        return 28, "Operation timed out"
    if error.kind == "url":
        return 3, f"URL rejected: {error.detail}"
    return 56, error.detail


def write_out(template: str, values: Mapping[str, Any]) -> str:
    """``--write-out``: its escapes, and ``%{name}`` filled from ``values`` (unknown: empty)."""
    text = template.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")
    return re.sub(r"%\{([a-z_]+)\}", lambda m: str(values.get(m.group(1), "")), text)


@dataclass
class CurlInvocation:
    """One curl process on a node: what it reads and where its traffic goes."""

    build: CurlBuild
    environment: MutableMapping[str, str]  # the process's own copy (changed by --proxy)
    trust: ssl.SSLContext  # the node's, as this curl build reads it
    network: LabNetwork | None
    address: str  # the node's, where its connections leave from
    recording: dict[str, Any]  # EgressSession's client, recorder and session
    read_file: Callable[[str], bytes]  # a file named on the command line (OSError if it cannot)
    write_file: Callable[[str, bytes], None]


def _with_explicit_proxy(options: dict[str, Any], environment: MutableMapping[str, str]) -> None:
    """``--proxy`` (and ``--proxy-user``) in place of every proxy variable; ``--noproxy`` in place
    of ``no_proxy``."""
    if options.get("proxy") is not None:
        explicit = options["proxy"]
        if options.get("proxy-user") and "@" not in explicit:
            scheme, _, rest = explicit.rpartition("://")
            explicit = f"{scheme or 'http'}://{options['proxy-user']}@{rest}"
        no_proxy = environment.get("no_proxy") or environment.get("NO_PROXY")
        had_no_proxy = "no_proxy" in environment or "NO_PROXY" in environment
        for variable in [k for k in environment if k.lower().endswith("_proxy")]:
            del environment[variable]
        environment.update({"http_proxy": explicit, "https_proxy": explicit})
        if had_no_proxy:
            environment["no_proxy"] = no_proxy or ""
    if options.get("noproxy") is not None:
        environment.pop("no_proxy", None)
        environment["no_proxy"] = options["noproxy"]


async def run_curl(args: list[str], call: CurlInvocation) -> tuple[str, str, int]:
    """``curl ARGS``: (stdout, stderr, exit status)."""
    build = call.build
    if "--version" in args or "-V" in args:  # before the other options: curl answers it alone
        return build.version + "\n", "", 0
    try:
        options, urls = parse_curl_arguments(args)
    except CurlUsage as exc:
        return "", f"curl: {exc}\n{USAGE_HINT}", 2
    if not urls:
        return "", f"curl: no URL specified!\n{USAGE_HINT}", 2
    env = call.environment
    _with_explicit_proxy(options, env)
    trust = call.trust
    if options.get("cacert"):
        try:
            pem = call.read_file(options["cacert"]).decode("ascii", "replace")
            trust = ssl.create_default_context(cadata=pem)
        except (OSError, ssl.SSLError, ValueError):
            return "", f"curl: (77) error setting certificate file: {options['cacert']}\n", 77
    if options.get("insecure"):
        trust = trust_context([], verify=False)
    verbose, silent = bool(options.get("verbose")), bool(options.get("silent"))
    show_error = bool(options.get("show-error")) or not silent
    out: list[str] = []
    err: list[str] = []
    code = 0
    rules = CLIENTS["curl"]
    method = options.get("request") or ("HEAD" if options.get("head") else "GET")
    headers = [tuple(h.split(":", 1)) for h in options["header"] if ":" in h]
    for url in urls:
        trace = Trace()
        async with EgressSession(call.network, call.address, trust, trace, user_agent=build.user_agent,
                                 **call.recording) as session:
            current, redirects = url, 0
            while True:
                decision = rules.decide(env, current)
                if decision.decision == "error":
                    code = 3
                    if show_error:
                        err.append(f"curl: (3) URL rejected: {decision.reason}\n")
                    break
                if verbose and decision.variable:
                    err.append(f"* Uses proxy env variable {decision.variable} == "
                               f"'{redact_url(env.get(decision.variable, ''))}'\n")
                parts = urlsplit(current)
                host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
                try:
                    response = await session.request(method, current, proxy=decision.proxy,
                                                     headers=[(k.strip(), v.strip()) for k, v in headers])
                except EgressError as exc:
                    code, message = curl_failure(exc, host, port, decision.proxy, build.tls, parts.scheme)
                    if verbose:
                        err.extend(line + "\n" for line in trace.lines)
                    if show_error:
                        err.append(f"curl: ({code}) {message}\n")
                        if code == 60 and build.tls.verify_help:
                            err.append(build.tls.verify_help)
                    break
                if options.get("location") and response.status in (301, 302, 303, 307, 308) \
                        and response.header("Location") and redirects < 20:
                    current = response.header("Location") or current
                    redirects += 1
                    continue
                if verbose:
                    err.extend(line + "\n" for line in trace.lines)
                    err.extend(f"< {k}: {v}\n" for k, v in response.headers)
                body = response.body.decode("utf-8", errors="replace")
                if options.get("head") or options.get("include"):
                    head = f"HTTP/{response.http_version} {response.status} {response.reason}\n" + "".join(
                        f"{k}: {v}\n" for k, v in response.headers) + "\n"
                    body = head + ("" if options.get("head") else body)
                if options.get("fail") and response.status >= 400:
                    code = 22
                    if show_error:
                        err.append(f"curl: (22) The requested URL returned error: {response.status}\n")
                elif options.get("output"):
                    call.write_file(options["output"], response.body)
                else:
                    out.append(body)
                if options.get("write-out"):
                    remote = session.remote or (host, port)
                    out.append(write_out(options["write-out"], {
                        "http_code": response.status, "url_effective": current,
                        "remote_ip": remote[0], "remote_port": remote[1], "exitcode": code,
                        "size_download": len(response.body)}))
                break
    return "".join(out), "".join(err), code
