"""Our per-client proxy rules against the real clients, on one matrix of environments and URLs.

Oracles: Debian's Go (a tiny program calling http.ProxyFromEnvironment), Debian's curl
(pointed at loopback sinks: `--connect-to` sends every direct connection to one port and each
proxy variable names its own port, so `%{remote_port}` tells which path curl took), and
Python's own urllib.request and requests in a subprocess with exactly the case's environment.
Nothing leaves loopback: proxies are on 127.99.0.1, direct connections are redirected there.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from proxyfleet.core.noproxy import CLIENTS, redact_text, redact_url
from proxyfleet.core.noproxy.go import GoRules
from tests.support import HANG

ROLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
BASE_PORT = 20000 + (os.getpid() % 5000) * 8  # one block of ports per worker process
# A loopback address of its own: the fixed ports cannot collide with the ephemeral ports the
# rest of the suite (labs, proxies, origins) binds on 127.0.0.1.
SINK_ADDRESS = "127.99.0.1"


def proxy(role: str, scheme: bool = True) -> str:
    port = BASE_PORT + 1 + ROLES.index(role)
    return f"http://{SINK_ADDRESS}:{port}" if scheme else f"{SINK_ADDRESS}:{port}"


ENVIRONMENTS: list[dict[str, str]] = [
    {"HTTP_PROXY": proxy("HTTP_PROXY"), "HTTPS_PROXY": proxy("HTTPS_PROXY")},
    {"http_proxy": proxy("http_proxy"), "https_proxy": proxy("https_proxy")},
    {"HTTP_PROXY": proxy("HTTP_PROXY"), "http_proxy": proxy("http_proxy"),
     "HTTPS_PROXY": proxy("HTTPS_PROXY"), "https_proxy": proxy("https_proxy")},
    {"HTTPS_PROXY": proxy("HTTPS_PROXY")},
    {"HTTP_PROXY": proxy("HTTP_PROXY")},
    {"ALL_PROXY": proxy("ALL_PROXY")},
    {"all_proxy": proxy("all_proxy"), "HTTPS_PROXY": proxy("HTTPS_PROXY")},
    {"HTTPS_PROXY": proxy("HTTPS_PROXY"), "HTTP_PROXY": proxy("HTTP_PROXY"), "NO_PROXY": ".example.com"},
    {"HTTPS_PROXY": proxy("HTTPS_PROXY"), "HTTP_PROXY": proxy("HTTP_PROXY"), "NO_PROXY": "example.com"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "*.example.com"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "*"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "corp.internal,*"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"),
     "no_proxy": "10.0.0.0/8,192.168.1.0/24"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "10.1.2.3,10.200.0.1"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"),
     "no_proxy": "example.com:8443,corp.internal:80"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"),
     "no_proxy": "2001:db8::/32,::1,[2001:db8::5]"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "example.com;corp.internal"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "example.com, corp.internal"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "example.com corp.internal"},
    {"HTTP_PROXY": proxy("HTTP_PROXY"), "http_proxy": "", "HTTPS_PROXY": proxy("HTTPS_PROXY"), "https_proxy": ""},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"),
     "NO_PROXY": "example.com", "no_proxy": "corp.internal"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": "EXAMPLE.COM.,localhost"},
    {"HTTPS_PROXY": proxy("HTTPS_PROXY", scheme=False), "HTTP_PROXY": proxy("HTTP_PROXY", scheme=False)},
    {"HTTPS_PROXY": proxy("HTTPS_PROXY"), "NO_PROXY": "1.2.3,20.0.1"},
    {"https_proxy": proxy("https_proxy"), "http_proxy": proxy("http_proxy"), "no_proxy": ".internal"},
]

URLS = [
    "http://example.com/",
    "https://example.com/",
    "https://www.example.com:8443/x",
    "https://notexample.com/",
    "http://sub.corp.internal/",
    "http://corp.internal:8443/",
    "https://10.1.2.3/",
    "http://10.200.0.1:8080/",
    "https://192.168.1.20/",
    "https://[2001:db8::5]/",
    "http://[::1]:8080/",
    "http://localhost:8080/",
    "https://127.0.0.1/",
    "https://example.com./",
    "https://EXAMPLE.com/",
]

CASES = [(env, url) for env in ENVIRONMENTS for url in URLS]


def test_the_matrix_is_big_enough() -> None:
    assert len(CASES) >= 200


def _hostport(url: str | None) -> str | None:
    """scheme://host:port of a proxy URL, credentials dropped, for comparison."""
    if url is None:
        return None
    parts = urlsplit(url if "://" in url else "http://" + url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port}"


def _report(mismatches: list[str]) -> str:
    return f"{len(mismatches)} of {len(CASES)} cases disagree:\n" + "\n".join(mismatches[:40])


# --- Go ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def go_oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[int, ...]]:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go toolchain (Debian golang-go) is not installed")
    work = tmp_path_factory.mktemp("go")
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "GOCACHE": str(work / "cache"),
           "GOPATH": str(work / "gopath"), "GO111MODULE": "off", "GOFLAGS": "-mod=mod",
           "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    binary = work / "proxyenv"
    source = Path(__file__).parent / "oracles" / "proxyenv.go"
    subprocess.run([go, "build", "-o", str(binary), str(source)], check=True, env=env,
                   capture_output=True, timeout=3 * HANG)  # the standard library compiled from scratch on a loaded runner
    version_text = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True,
                                  text=True, check=True).stdout.strip()
    version = tuple(int(p) for p in version_text.removeprefix("go").split(".") if p.isdigit())
    return binary, version


def test_go_rules_agree_with_real_go(go_oracle: tuple[Path, tuple[int, ...]]) -> None:
    binary, version = go_oracle
    rules = GoRules(version=version)  # the matrix includes a case that changed in Go 1.23.7
    mismatches = []
    for env in ENVIRONMENTS:
        output = subprocess.run([str(binary), *URLS], env=env, capture_output=True, text=True,
                                check=True, timeout=HANG).stdout
        for line in output.splitlines():
            real = json.loads(line)
            ours = rules.decide(env, real["url"])
            if (ours.decision, _hostport(ours.proxy)) != (real["decision"], _hostport(real.get("proxy"))):
                mismatches.append(f"{env} {real['url']}: go={real} ours={ours.decision} {ours.proxy}"
                                  f" ({ours.reason})")
    assert not mismatches, _report(mismatches)


REDACTION_URLS = [
    "http://user:s3cr@TAIL@proxy.corp:3128",  # Go splits at the last "@"
    "http://user:p@ss@w0rd@proxy.corp:3128/path?q=a@b#frag@x",
    "http://o'brien:pa$(x)@proxy2.corp:8080",
    "https://token@proxy.corp",
    "http://%40user:p%3Ass@proxy.corp:3128",
    "http://:only-password@proxy.corp:3128",
    "http://proxy.corp:3128",
    "http://user:pw@[fd00::1]:3128",
]


def test_redaction_hides_exactly_what_go_reads_as_userinfo(tmp_path_factory: pytest.TempPathFactory) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go toolchain (Debian golang-go) is not installed")
    work = tmp_path_factory.mktemp("go-userinfo")
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "GOCACHE": str(work / "cache"),
           "GOPATH": str(work / "gopath"), "GO111MODULE": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    binary = work / "userinfo"
    subprocess.run([go, "build", "-o", str(binary), str(Path(__file__).parent / "oracles" / "userinfo.go")],
                   check=True, env=env, capture_output=True, timeout=3 * HANG)  # the standard library compiled from scratch on a loaded runner
    output = subprocess.run([str(binary), *REDACTION_URLS], capture_output=True, text=True, check=True,
                            timeout=HANG).stdout
    for line in output.splitlines():
        real = json.loads(line)
        assert not real.get("error"), real
        url = real["url"]
        for redacted in (redact_url(url), redact_text(f"failed via {url} today")):
            assert redacted is not None
            secrets = [s for s in (real["user"], real["password"]) if len(s) > 2]
            assert not any(secret in redacted for secret in secrets), (url, redacted, real)
            assert real["host"] in redacted, (url, redacted)  # the proxy's address stays readable
            if real["has_user"]:  # everything before the host is masked, not just a prefix of it
                before_host = redacted.split(f"@{real['host']}")[0]
                assert before_host.endswith("://***:***") or before_host.endswith("://***"), redacted
            else:
                assert "***" not in redacted


def test_current_go_no_longer_matches_ip_literals_against_domain_entries() -> None:
    env = {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "1.2.3"}
    assert GoRules(version=(1, 19, 8)).decide(env, "https://10.1.2.3/").decision == "direct"
    assert GoRules(version=(1, 23, 7)).decide(env, "https://10.1.2.3/").decision == "proxy"


# --- curl -------------------------------------------------------------------------------------


@pytest.fixture
async def sinks() -> AsyncIterator[int]:
    """Loopback listeners that accept and hang up: one for direct traffic, one per proxy role."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    servers = [await asyncio.start_server(hang_up, SINK_ADDRESS, BASE_PORT + offset)
               for offset in range(len(ROLES) + 1)]
    try:
        yield BASE_PORT
    finally:
        for server in servers:
            server.close()
            await server.wait_closed()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_curl_rules_agree_with_real_curl(sinks: int) -> None:
    rules = CLIENTS["curl"]
    port_roles = {str(BASE_PORT + 1 + i): role for i, role in enumerate(ROLES)}
    mismatches = []
    for env in ENVIRONMENTS:
        args = ["curl", "-s", "--max-time", "5", "--connect-to", f"::{SINK_ADDRESS}:{sinks}",
                "-w", "%{remote_port}\\n"]
        for url in URLS:
            args += ["-o", "/dev/null", url]
        process = await asyncio.create_subprocess_exec(*args, env=env, stdout=asyncio.subprocess.PIPE)
        out, _ = await process.communicate()
        ports = out.decode().split()
        assert len(ports) == len(URLS), out
        for url, port in zip(URLS, ports, strict=True):
            real = ("direct", None) if port == str(sinks) else ("proxy", port_roles.get(port, port))
            ours = rules.decide(env, url)
            if (ours.decision, ours.variable) != real:
                mismatches.append(f"{env} {url}: curl={real} ours={ours.decision} {ours.variable} "
                                  f"({ours.reason})")
    assert not mismatches, _report(mismatches)


# --- Python ---------------------------------------------------------------------------------------

PYTHON_ORACLE = """
import json, sys, urllib.request
import requests.utils
from requests.sessions import Session
for url in sys.argv[1:]:
    request = urllib.request.Request(url)
    proxies = urllib.request.getproxies()
    if request.type in proxies and not (request.host and urllib.request.proxy_bypass(request.host)):
        kind, user, password, hostport = urllib.request._parse_proxy(proxies[request.type])
        urllib_result = ["proxy", f"{kind or request.type}://{hostport}"]
    else:
        urllib_result = ["direct", None]
    settings = Session().merge_environment_settings(url, {}, None, None, None)
    chosen = requests.utils.select_proxy(url, settings["proxies"])
    requests_result = (["proxy", requests.utils.prepend_scheme_if_needed(chosen, "http")]
                       if chosen else ["direct", None])
    print(json.dumps({"url": url, "python-urllib": urllib_result, "python-requests": requests_result}))
"""


@pytest.mark.parametrize("client", ["python-urllib", "python-requests"])
def test_python_rules_agree_with_the_real_libraries(client: str) -> None:
    pytest.importorskip("requests")
    rules = CLIENTS[client]
    mismatches = []
    for env in ENVIRONMENTS:
        output = subprocess.run([sys.executable, "-c", PYTHON_ORACLE, *URLS], env=env,
                                capture_output=True, text=True, check=True, timeout=HANG).stdout
        for line in output.splitlines():
            real = json.loads(line)
            decision, proxy_url = real[client]
            ours = rules.decide(env, real["url"])
            if (ours.decision, _hostport(ours.proxy)) != (decision, _hostport(proxy_url)):
                mismatches.append(f"{env} {real['url']}: real={decision} {proxy_url} "
                                  f"ours={ours.decision} {ours.proxy} ({ours.reason})")
    assert not mismatches, _report(mismatches)
