"""A node's network clients: ``crictl.exe pull`` (containerd's Go rules and process environment),
``curl.exe`` (curl's rules, the session environment) and ``Invoke-WebRequest`` (which, like
Windows PowerShell 5.1, ignores HTTP(S)_PROXY).

All of them trust ``Cert:\\LocalMachine\\Root`` (the built-in public roots plus whatever was
imported), resolve names through the lab table and leave from the node's own address, so the
proxy's flow log and the origins' access logs attribute their traffic to the node.
"""

from __future__ import annotations

import hashlib
import json
import re
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from proxyfleet.core.imagereference import ImageReference, parse_image
from proxyfleet.core.noproxy import CLIENTS, redact_url
from proxyfleet.simulators.egress.client import EgressError, EgressSession, Response, Trace, trust_context
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.windows.environment import EnvironmentBlock
from proxyfleet.simulators.windows.machine import WindowsMachine

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.powershell.context import NativeResult
    from proxyfleet.simulators.windows.powershell.interpreter import Interpreter

MANIFEST_ACCEPT = ("application/vnd.oci.image.manifest.v1+json, "
                   "application/vnd.docker.distribution.manifest.v2+json, "
                   "application/vnd.oci.image.index.v1+json")


def node_network(interpreter: Interpreter) -> tuple[LabNetwork | None, str]:
    """The lab network and the node's own address (127.0.0.1 outside a fleet)."""
    runtime = interpreter.session.runtime
    network = getattr(runtime, "network", None)
    address = getattr(runtime, "address", "127.0.0.1")
    return network, address


def recording(machine: WindowsMachine, client: str) -> dict[str, Any]:
    """An ``EgressSession``'s recorder arguments: every request of this invocation of ``client``
    goes into the machine's egress log, under one session number."""
    return {"client": client, "recorder": machine.egress.add, "session": machine.egress.new_session()}


_TRUST_CACHE: dict[frozenset[str], ssl.SSLContext] = {}


def machine_trust(machine: WindowsMachine) -> ssl.SSLContext:
    """An SSL context trusting exactly the node's LocalMachine\\Root store."""
    store = machine.stores.machine_root
    key = frozenset(store.certificates)
    context = _TRUST_CACHE.get(key)
    if context is None:
        context = trust_context([c.der for c in store.certificates.values()])
        if len(_TRUST_CACHE) > 4096:
            _TRUST_CACHE.clear()
        _TRUST_CACHE[key] = context
    return context


# --- Go-style errors (containerd) -------------------------------------------------------------


def go_error(error: EgressError, session: EgressSession, host: str, port: int,
             proxy: str | None) -> str:
    proxy_host = urlsplit(proxy).hostname if proxy else None
    proxy_port = urlsplit(proxy).port if proxy else None
    if error.kind.startswith("proxy-tls") and proxy_host:  # the TLS to an https:// proxy itself
        inner = EgressError(error.kind.removeprefix("proxy-"), error.detail)
        return "proxyconnect tcp: " + go_error(inner, session, proxy_host, proxy_port or 443, None)
    if error.kind == "dns":
        return f"dial tcp: lookup {host}: no such host"
    if error.kind == "proxy-dns":
        return f"proxyconnect tcp: dial tcp: lookup {proxy_host}: no such host"
    if error.kind == "refused":
        return f"dial tcp {host}:{port}: connect: connection refused"
    if error.kind in ("proxy-refused", "proxy-reset"):
        return f"proxyconnect tcp: dial tcp {proxy_host}:{proxy_port}: connect: connection refused"
    if error.kind == "proxy-status":
        return error.detail.split(" ", 1)[1] if " " in error.detail else error.detail
    if error.kind == "tls-unknown-authority":
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if error.kind == "tls-hostname":
        return f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
    if error.kind == "reset":
        return f"read tcp {session.source_address}->{host}:{port}: read: connection reset by peer"
    if error.kind == "timeout":
        return "net/http: TLS handshake timeout"
    return error.detail


class PullFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


async def pull_image(machine: WindowsMachine, network: LabNetwork | None, source: str,
                     environment: Mapping[str, str], image: ImageReference) -> str:
    """containerd's pull: resolve (HEAD), fetch manifest, config and layers; verify digests.

    Returns the image id (config digest); raises PullFailed with containerd's message.
    """
    async with EgressSession(network, source, machine_trust(machine), user_agent="containerd/v1.7.0",
                             **recording(machine, "containerd")) as session:
        return await _pull(machine, session, environment, image)


async def _pull(machine: WindowsMachine, session: EgressSession, environment: Mapping[str, str],
                image: ImageReference) -> str:
    rules = CLIENTS["go"]
    ref = str(image)
    base = f"https://{image.host}/v2/{image.repository}"

    async def fetch(method: str, url: str, accept: str | None = None) -> Response:
        decision = rules.decide(environment, url)
        if decision.decision == "error":
            raise PullFailed("Unknown", f"failed to do request: {method.title()} \"{url}\": "
                                        f"{decision.reason}")
        host, port = urlsplit(url).hostname or "", urlsplit(url).port or 443
        try:
            return await session.request(method, url, proxy=decision.proxy,
                                         headers=[("Accept", accept)] if accept else [])
        except EgressError as exc:
            cause = go_error(exc, session, host, port, decision.proxy)
            raise PullFailed("Unknown",
                             f"failed to do request: {method.title()} \"{url}\": {cause}") from None

    try:
        head = await fetch("HEAD", f"{base}/manifests/{image.reference}", MANIFEST_ACCEPT)
    except PullFailed as failure:
        raise PullFailed(failure.code, f"failed to resolve reference \"{ref}\": {failure}") from None
    if head.status == 404:
        raise PullFailed("NotFound", f"failed to resolve reference \"{ref}\": {ref}: not found")
    if head.status >= 400:
        raise PullFailed("Unknown", f"failed to resolve reference \"{ref}\": unexpected status "
                                    f"from HEAD request to {base}/manifests/{image.reference}: "
                                    f"{head.status} {head.reason}")
    digest = head.header("Docker-Content-Digest")
    manifest_response = await fetch("GET", f"{base}/manifests/{digest or image.reference}",
                                    MANIFEST_ACCEPT)
    manifest_bytes = manifest_response.body
    actual = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
    if manifest_response.status != 200 or (digest and digest != actual) or (
            image.digest and image.digest != actual):
        raise PullFailed("Unknown", f"failed to pull and unpack image \"{ref}\": manifest "
                                    f"digest mismatch (expected {digest or image.digest}, got {actual})")
    try:
        manifest = json.loads(manifest_bytes)
        blobs = [manifest["config"], *manifest["layers"]]
    except (ValueError, KeyError, TypeError):
        raise PullFailed("Unknown",
                         f"failed to pull and unpack image \"{ref}\": invalid manifest") from None
    for blob in blobs:
        response = await fetch("GET", f"{base}/blobs/{blob['digest']}")
        got = "sha256:" + hashlib.sha256(response.body).hexdigest()
        if response.status != 200 or got != blob["digest"]:
            raise PullFailed("Unknown", f"failed to pull and unpack image \"{ref}\": failed to "
                                        f"copy: blob {blob['digest']}: digest mismatch or status "
                                        f"{response.status}")
    image_id: str = manifest["config"]["digest"]
    machine.images[ref] = image_id
    return image_id


def _crictl_time(machine: WindowsMachine) -> str:
    return machine.now().strftime("%Y-%m-%dT%H:%M:%SZ")


async def crictl(interpreter: Interpreter, name: str, args: list[str],
                 stdin: str | None) -> NativeResult:
    from proxyfleet.simulators.windows.powershell.context import NativeResult

    machine = interpreter.session.machine
    words = [a for a in args if a not in ("--debug", "-D")]
    while words and words[0] in ("-r", "--runtime-endpoint", "-i", "--image-endpoint", "-t", "--timeout"):
        words = words[2:]
    if not words or words[0] in ("-h", "--help", "help"):
        return NativeResult("NAME:\n   crictl - client for CRI\n\nCOMMANDS:\n   pull     Pull an image "
                            "from a registry\n   images   List images\n   version  Display "
                            "runtime version information\n", "", 0)
    command, rest = words[0], words[1:]
    containerd = machine.service("containerd")
    if command == "version":
        return NativeResult("Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v1.7.0\n"
                            "RuntimeApiVersion:  v1\n", "", 0)
    if containerd is None or containerd.process is None:
        return NativeResult("", f'time="{_crictl_time(machine)}" level=fatal msg="validate service '
                                'connection: validate CRI v1 image API for endpoint '
                                '\\"npipe:////./pipe/containerd-containerd\\": rpc error: code = '
                                'Unavailable desc = connection error: desc = \\"transport: Error '
                                'while dialing: open \\\\\\\\.\\\\pipe\\\\containerd-containerd: '
                                'The system cannot find the file specified.\\""\n', 1)
    if command == "images":
        lines = ["IMAGE                                     TAG                 IMAGE ID"]
        for reference, image_id in sorted(machine.images.items()):
            repository, _, tag = reference.rpartition(":")
            lines.append(f"{repository:41} {tag:19} {image_id[7:20]}")
        return NativeResult("\n".join(lines) + "\n", "", 0)
    if command != "pull":
        return NativeResult("", f"No help topic for '{command}'\n", 3)
    # Go's flag parsing (urfave/cli): "--" ends the options, every word after it is an operand.
    end = rest.index("--") if "--" in rest else len(rest)
    images = [a for a in rest[:end] if not a.startswith("-")] + rest[end + 1:]
    if len(images) != 1:
        return NativeResult("", f'time="{_crictl_time(machine)}" level=fatal msg="image name '
                                'cannot be empty"\n', 1)
    try:
        image = parse_image(images[0])
    except ValueError as exc:
        return NativeResult("", f'time="{_crictl_time(machine)}" level=fatal msg="pulling image: '
                                f'rpc error: code = InvalidArgument desc = {exc}"\n', 1)
    network, address = node_network(interpreter)
    try:
        # Go's os.Getenv on Windows is case-insensitive, like the process environment itself.
        image_id = await pull_image(machine, network, address,
                                    EnvironmentBlock(containerd.process.environment), image)
    except PullFailed as failure:
        message = (f'pulling image: rpc error: code = {failure.code} desc = failed to pull and '
                   f'unpack image "{image}": {failure}')
        escaped = message.replace("\\", "\\\\").replace('"', '\\"')
        return NativeResult("", f'time="{_crictl_time(machine)}" level=fatal msg="{escaped}"\n', 1)
    return NativeResult(f"Image is up to date for {image_id}\n", "", 0)


# --- curl.exe --------------------------------------------------------------------------------

CURL_VERSION = "curl 8.7.1 (Windows) libcurl/8.7.1 Schannel zlib/1.3 WinIDN"
_SHORT_FLAGS = {"s": "silent", "S": "show-error", "v": "verbose", "I": "head", "L": "location",
                "k": "insecure", "f": "fail", "i": "include"}
_SHORT_VALUES = {"o": "output", "w": "write-out", "x": "proxy", "X": "request", "H": "header",
                 "m": "max-time", "U": "proxy-user"}
_LONG_FLAGS = {"silent", "show-error", "verbose", "head", "location", "insecure", "fail", "include"}
_LONG_VALUES = {"output", "write-out", "noproxy", "proxy", "proxy-cacert", "request", "header",
                "max-time", "connect-timeout", "proxy-user", "cacert"}


class CurlUsage(Exception):
    pass


def parse_curl_arguments(args: list[str]) -> tuple[dict[str, Any], list[str]]:
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


def _curl_failure(error: EgressError, host: str, port: int, proxy: str | None,
                  scheme: str = "https") -> tuple[int, str]:
    proxy_parts = urlsplit(proxy) if proxy else None
    if error.kind.startswith("proxy-tls"):  # the TLS to an https:// proxy itself: curl says the same
        return _curl_failure(EgressError(error.kind.removeprefix("proxy-"), error.detail), host, port, None)
    if error.kind == "dns":
        return 6, f"Could not resolve host: {host}"
    if error.kind == "proxy-dns":
        return 5, f"Could not resolve proxy: {proxy_parts.hostname if proxy_parts else ''}"
    if error.kind == "refused":
        return 7, f"Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server"
    if error.kind in ("proxy-refused", "proxy-reset") and proxy_parts is not None:
        return 7, (f"Failed to connect to {proxy_parts.hostname} port {proxy_parts.port} after 0 ms: "
                   "Couldn't connect to server")
    if error.kind == "proxy-status":
        return 56, f"CONNECT tunnel failed, response {error.status}"
    if error.kind == "tls-unknown-authority":
        return 60, ("schannel: SEC_E_UNTRUSTED_ROOT (0x80090325) - The certificate chain was issued "
                    "by an authority that is not trusted.")
    if error.kind == "tls-hostname":
        return 60, ("schannel: SNI or certificate check failed: SEC_E_WRONG_PRINCIPAL (0x80090322) - "
                    "The target principal name is incorrect.")
    if error.kind == "reset" and scheme == "http":  # no TLS to fail: the reset comes on the read
        return 56, "Recv failure: Connection was reset"
    if error.kind in ("reset", "tls"):
        return 35, "schannel: failed to receive handshake, SSL/TLS connection failed"
    if error.kind == "timeout":
        return 28, "Operation timed out"
    if error.kind == "url":
        return 3, f"URL rejected: {error.detail}"
    return 56, error.detail


def _write_out(template: str, values: Mapping[str, Any]) -> str:
    text = template.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")
    return re.sub(r"%\{([a-z_]+)\}", lambda m: str(values.get(m.group(1), "")), text)


async def curl(interpreter: Interpreter, name: str, args: list[str],
               stdin: str | None) -> NativeResult:
    from proxyfleet.simulators.windows.powershell.context import NativeResult

    try:
        options, urls = parse_curl_arguments(args)
    except CurlUsage as exc:
        return NativeResult("", f"curl: {exc}\ncurl: try 'curl --help' for more information\n", 2)
    if "--version" in args or "-V" in args:
        return NativeResult(CURL_VERSION + "\n", "", 0)
    if not urls:
        return NativeResult("", "curl: no URL specified!\ncurl: try 'curl --help' for more "
                                "information\n", 2)
    session_env = interpreter.session.environment
    env = session_env.copy()  # Windows: variable names are case-insensitive for curl.exe too
    if options.get("proxy") is not None:
        explicit = options["proxy"]
        if options.get("proxy-user") and "@" not in explicit:
            scheme, _, rest = explicit.rpartition("://")
            explicit = f"{scheme or 'http'}://{options['proxy-user']}@{rest}"
        for variable in [k for k in env if k.lower().endswith("_proxy")]:
            del env[variable]
        env.update({"http_proxy": explicit, "https_proxy": explicit})
        if "no_proxy" in session_env or "NO_PROXY" in session_env:
            env["no_proxy"] = session_env.get("no_proxy") or session_env.get("NO_PROXY", "")
    if options.get("noproxy") is not None:
        env.pop("no_proxy", None)
        env["no_proxy"] = options["noproxy"]
    machine = interpreter.session.machine
    trust = machine_trust(machine)
    if options.get("cacert"):
        path = interpreter.session.resolve_file_path(options["cacert"])
        try:
            pem = interpreter.session.read_file(path).decode("ascii", "replace")
            trust = ssl.create_default_context(cadata=pem)
        except (OSError, ssl.SSLError, ValueError):
            return NativeResult("", f"curl: (77) error setting certificate file: {options['cacert']}\n", 77)
    if options.get("insecure"):
        trust = trust_context([], verify=False)
    network, address = node_network(interpreter)
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
        async with EgressSession(network, address, trust, trace, user_agent="curl/8.7.1",
                                 **recording(machine, "curl")) as session:
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
                    code, message = _curl_failure(exc, host, port, decision.proxy, parts.scheme)
                    if verbose:
                        err.extend(line + "\n" for line in trace.lines)
                    if show_error:
                        err.append(f"curl: ({code}) {message}\n")
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
                    target = interpreter.session.resolve_file_path(options["output"])
                    interpreter.session.write_file(target, response.body)
                else:
                    out.append(body)
                if options.get("write-out"):
                    remote = session.remote or (host, port)
                    out.append(_write_out(options["write-out"], {
                        "http_code": response.status, "url_effective": current,
                        "remote_ip": remote[0], "remote_port": remote[1], "exitcode": code,
                        "size_download": len(response.body)}))
                break
    return NativeResult("".join(out), "".join(err), code)

