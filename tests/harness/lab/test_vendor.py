"""A vendor's proxy run by the lab: placeholders, the hosts file, privileges, start-up failures,
logs kept, and a real Squid process carrying traffic by the lab's names (with Basic
authentication: the 407 path and a wrong password)."""

import asyncio
import base64
import contextlib
import logging
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import pytest_asyncio

from proxyfleet.core.noproxy import redact_text
from proxyfleet.core.owners import current_owner
from proxyfleet.core.privatedirs import runtime_directory
from proxyfleet.harness.lab import configdirs, vendor
from proxyfleet.harness.lab.vendor import (
    VendorProxy,
    VendorProxyError,
    VendorProxySettings,
    VendorProxySpec,
    fill,
    open_connections,
    parse_listen,
    private_etc_hosts,
)
from proxyfleet.simulators.network import Endpoint
from proxyfleet.simulators.origins.catalog import real_ports_allowed
from tests.support import fill_accept_queue

EXAMPLES = Path(__file__).parents[3] / "examples" / "squid"
SQUID = shutil.which("squid") or ("/usr/sbin/squid" if Path("/usr/sbin/squid").exists() else None)
needs_squid = pytest.mark.skipif(SQUID is None, reason="Squid is not installed (apt-get install squid)")
needs_real_ports = pytest.mark.skipif(not real_ports_allowed(), reason="port 80 needs root or "
                                      "net.ipv4.ip_unprivileged_port_start=0")
# Squid refuses to run as root: as root, it drops to Debian's `proxy` user.
PROXY_USER = "proxy" if os.geteuid() == 0 else None
# One block of addresses per xdist worker: the Squid tests bind fixed ports, and two workers
# running this module at once must not meet on them.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
LISTEN = f"127.20.{77 + _WORKER}.1"
EGRESS = f"127.20.{77 + _WORKER}.2"
ORIGIN = f"127.30.{77 + _WORKER}.1"


def test_fill_replaces_only_known_placeholders() -> None:
    assert fill("a {x} {y} {{z}} ${HOME}", {"x": "1"}) == "a 1 {y} {{z}} ${HOME}"


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.5:3128") == Endpoint("127.0.0.5", 3128)
    assert parse_listen("[::1]:8080") == Endpoint("::1", 8080)
    for bad in ("3128", "127.0.0.1:0", "127.0.0.1:x", "10.0.0.1:3128"):
        with pytest.raises(VendorProxyError):
            parse_listen(bad)


def test_a_spec_is_a_command_or_a_url_not_both() -> None:
    with pytest.raises(VendorProxyError):
        VendorProxySpec()
    with pytest.raises(VendorProxyError):
        VendorProxySpec(command="squid", url="http://127.0.0.1:3128")
    described = VendorProxySpec(url="http://127.0.0.1:3128", auth="u:secret").describe()
    assert "secret" not in described and "Basic" in described and "tunnelling" in described


def test_a_tls_listener_is_checked_and_described() -> None:
    described = VendorProxySpec(command="squid", tls_port=3129).describe()
    assert "https:// on port 3129" in described
    with pytest.raises(VendorProxyError, match="needs the CA of its certificate"):
        VendorProxySpec(url="http://127.0.0.1:3128", tls_port=3129)
    with pytest.raises(VendorProxyError, match="give --proxy-tls-port too"):
        VendorProxySpec(command="squid", tls_ca_pem=b"-----BEGIN CERTIFICATE-----")
    with pytest.raises(VendorProxyError, match="not a port"):
        VendorProxySpec(command="squid", tls_port=70000)


def test_a_tls_listener_gets_its_port_certificate_and_private_key(tmp_path: Path) -> None:
    proxy = VendorProxy(_settings(tmp_path, user=None, tls_port=3129, tls_cert_pem=b"CERT", tls_key_pem=b"KEY",
                                  auth="u:pw"))
    proxy._prepare()
    try:
        assert proxy.config_dir is not None
        values = proxy.values()
        assert values["tls_port"] == "3129"
        assert Path(values["tls_cert_file"]).read_bytes() == b"CERT"
        key = Path(values["tls_key_file"])
        assert key.read_bytes() == b"KEY" and stat.S_IMODE(key.stat().st_mode) == 0o600
        assert proxy.endpoints == [Endpoint(LISTEN, 3128), Endpoint(LISTEN, 3129)]
        assert proxy.https_url("proxy.corp.internal") == "https://u:pw@proxy.corp.internal:3129"
        assert proxy.https_url("p", with_credentials=False) == "https://p:3129"
    finally:
        proxy.remove()
    plain = VendorProxy(_settings(tmp_path, user=None))
    assert plain.https_url("p") == "http://p:3128" and plain.endpoints == [Endpoint(LISTEN, 3128)]


def test_open_connections_reads_established_and_close_wait_sockets() -> None:
    # local 127.20.77.1:3128 = 014D147F:0C38; states 01 ESTABLISHED, 08 CLOSE_WAIT, 0A LISTEN
    table = ("  sl  local_address rem_address   st\n"
             "   0: 014D147F:0C38 00000000:0000 0A\n"
             "   1: 014D147F:0C38 0100007F:9C40 01\n"
             "   2: 014D147F:0C38 0100007F:9C41 08\n"
             "   3: 014D147F:0C39 0100007F:9C42 01\n")
    assert open_connections(Endpoint("127.20.77.1", 3128), table) == 2


def _settings(tmp_path: Path, config: str = "squid.conf", **overrides: object) -> VendorProxySettings:
    values: dict[str, object] = {
        "state_dir": tmp_path / "state", "listen": Endpoint(LISTEN, 3128), "egress_address": EGRESS,
        "hosts_text": f"{ORIGIN} origin.example\n", "command": f"{SQUID} -N -n {{instance}} -f {{config_dir}}/{config}",
        "config_files": [EXAMPLES / config], "user": PROXY_USER}
    values.update(overrides)
    return VendorProxySettings(**values)  # type: ignore[arg-type]


async def test_a_proxy_that_exits_at_start_up_is_reported_with_its_output(tmp_path: Path) -> None:
    script = tmp_path / "proxy.sh"
    script.write_text("#!/bin/sh\necho 'FATAL: bad directive in {config_dir}' >&2\nexit 3\n")
    script.chmod(0o755)
    proxy = VendorProxy(_settings(tmp_path, command=f"{script} {{listen_port}}", config_files=[], user=None))
    with pytest.raises(VendorProxyError, match=r"(?s)exited during start-up.*FATAL: bad directive"):
        await proxy.start()
    assert not proxy.running
    assert stat.S_IMODE((tmp_path / "state" / "proxy.log").stat().st_mode) == 0o600
    assert proxy.config_dir is None  # a proxy that did not start leaves no configuration behind


def _named_logs(message: str) -> list[Path]:
    """The copies of its logs a start-up error names (it never quotes them)."""
    match = re.search(r"its logs \(copied from \{config_dir\}, kept\): (.*?) \(a proxy like Squid", message)
    assert match, message
    return [Path(name) for name in match.group(1).split(", ")]


async def test_a_proxy_that_says_why_in_its_own_log_is_reported_with_where_that_log_is_kept(tmp_path: Path) -> None:
    # Squid prints nothing when it dies at start-up: the reason is in its cache.log, a file of the
    # proxy's, which the error names (a kept copy) rather than quotes into reports.
    script = tmp_path / "proxy.sh"
    script.write_text("#!/bin/sh\necho 'FATAL: no shared memory' > \"$1/cache.log\"\n: > \"$1/access.log\"\nexit 1\n")
    script.chmod(0o755)
    proxy = VendorProxy(_settings(tmp_path, command=f"{script} {{config_dir}}", config_files=[], user=None))
    with pytest.raises(VendorProxyError, match=r"exited during start-up") as raised:
        await proxy.start()
    message = str(raised.value)
    assert "FATAL" not in message and "access.log" not in message  # the access log says nothing about starting
    [kept] = _named_logs(message)
    try:
        assert kept.name == "cache.log" and kept.read_text() == "FATAL: no shared memory\n"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        assert kept.parent.name.startswith("proxyfleet-proxy-logs-")  # outlives a run's scratch directory
    finally:
        shutil.rmtree(kept.parent)
    # a lab whose state directory is kept keeps them there, in its proxy directory
    kept_state = VendorProxy(_settings(tmp_path, command=f"{script} {{config_dir}}", config_files=[], user=None,
                                       state_kept=True))
    with pytest.raises(VendorProxyError) as raised:
        await kept_state.start()
    assert _named_logs(str(raised.value)) == [tmp_path / "state" / "cache.log"]
    assert (tmp_path / "state" / "cache.log").read_text() == "FATAL: no shared memory\n"


async def test_a_start_up_error_quotes_only_the_proxys_own_output_and_never_follows_its_links(tmp_path: Path) -> None:
    # A proxy that puts a link to a root-only file where its cache.log goes, and prints escape
    # sequences and a URL with a password: the error (and every report it reaches) shows neither
    # the file nor the password, and no sequence a terminal would act on.
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$TOPSECRET\n")
    secret.chmod(0o600)
    script = tmp_path / "proxy.sh"
    script.write_text(f"#!/bin/sh\nln -s {secret} \"$1/cache.log\"\nmkfifo \"$1/store.log\"\n"
                      "printf 'FATAL: \\033]0;owned\\007 upstream http://svc:S3cr3t@up.example:8080 refused\\n'\nexit 1\n")
    script.chmod(0o755)
    proxy = VendorProxy(_settings(tmp_path, command=f"{script} {{config_dir}}", config_files=[], user=None))
    with pytest.raises(VendorProxyError) as raised:
        await proxy.start()
    message = str(raised.value)
    assert "TOPSECRET" not in message and "S3cr3t" not in message and "\x1b" not in message
    assert "FATAL: \\x1b]0;owned\\x07 upstream http://***:***@up.example:8080 refused" in message
    assert "not copied from {config_dir}: cache.log (a symbolic link), store.log (not a regular file)" in message
    assert "its logs" not in message  # nothing was copied: no directory kept for it


def test_every_proxy_gets_a_name_of_its_own_for_machine_wide_resources(tmp_path: Path) -> None:
    first, second = (VendorProxy(_settings(tmp_path, user=None)) for _ in range(2))
    assert first.instance != second.instance
    assert first.instance.isalnum() and first.instance.isascii()  # Squid's -n takes nothing else
    first._prepare()
    try:
        assert f" -n {first.instance} " in " ".join(first._argv())
    finally:
        first.remove()


async def test_a_failed_start_deletes_the_configuration_directory_it_made(tmp_path: Path) -> None:
    parent = tmp_path / "proxies"  # where {config_dir}s are made
    for settings in (_settings(tmp_path, command="no-such-proxy-binary", user=None, config_parent=parent),
                     _settings(tmp_path, command="squid {nope}", user=None, config_parent=parent),
                     _settings(tmp_path, config_files=[EXAMPLES / "squid.conf", tmp_path / "missing.conf"], user=None,
                               config_parent=parent)):
        with pytest.raises(VendorProxyError):
            await VendorProxy(settings).start()
        assert list(parent.iterdir()) == []  # the directory and its owner record
    with pytest.raises(VendorProxyError, match="does not exist"):  # preparing alone, too
        VendorProxy(_settings(tmp_path, user="no-such-user-here", config_parent=parent))._prepare()
    assert list(parent.iterdir()) == []


def test_a_config_dir_lives_under_a_parent_only_proxyfleet_writes_with_its_owner_recorded(tmp_path: Path) -> None:
    proxy = VendorProxy(_settings(tmp_path, user=None))
    proxy._prepare()
    try:
        assert proxy.config_dir is not None
        parent = proxy.config_dir.parent
        assert parent == runtime_directory() / "proxies"  # /run/proxyfleet/proxies as root, not /tmp
        info = parent.stat()
        assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o711  # passable, not listable
        assert configdirs.recorded_owner(parent, proxy.config_dir.name) == current_owner()
    finally:
        proxy.remove()


async def test_a_missing_program_or_a_bad_template_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VendorProxyError, match="cannot start the proxy 'no-such-proxy-binary'"):
        await VendorProxy(_settings(tmp_path, command="no-such-proxy-binary", config_files=[], user=None)).start()
    with pytest.raises(VendorProxyError, match="malformed"):
        await VendorProxy(_settings(tmp_path, command="squid {nope}", config_files=[], user=None)).start()
    with pytest.raises(VendorProxyError, match="does not exist"):
        await VendorProxy(_settings(tmp_path, config_files=[tmp_path / "missing.conf"], user=None)).start()


async def test_a_running_proxy_that_does_not_answer_is_reported(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = VendorProxy(_settings(tmp_path, command=None, url=f"http://127.0.0.1:{port}"))
    with pytest.raises(VendorProxyError, match="does not answer"):
        await proxy.start(startup_limit=0.3)
    with pytest.raises(VendorProxyError, match="not http://host:port"):
        VendorProxy(_settings(tmp_path, command=None, url="socks5://127.0.0.1:1080"))


async def test_a_listener_that_never_accepts_is_a_look_that_ends_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A port whose listener never accepts and whose accept queue is full holds a connect in SYN
    retries for two minutes: each start-up look is bounded, and the error says what happened."""
    monkeypatch.setattr(vendor, "READY_LOOK_SECONDS", 0.5)
    with socket.socket() as holder, contextlib.ExitStack() as queued:
        holder.bind(("127.0.0.1", 0))
        holder.listen(0)
        port = holder.getsockname()[1]
        fill_accept_queue("127.0.0.1", port, queued)
        proxy = VendorProxy(_settings(tmp_path, command=None, url=f"http://127.0.0.1:{port}"))
        with pytest.raises(VendorProxyError, match=r"does not answer on 127\.0\.0\.1:\d+ \(no answer within 0\.5 s;"):
            await proxy.start(startup_limit=0.3)

def test_proxy_config_leaves_out_links_and_non_regular_files_and_says_which(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = tmp_path / "kubeconfig"
    secret.write_text("client-key-data: TOPSECRET\n")
    source = tmp_path / "vendor-config"
    (source / "certs").mkdir(parents=True)
    (source / "squid.conf").write_text("http_port {listen_host}:{listen_port}\n")
    (source / "certs" / "ca.pem").write_bytes(b"\x80binary")
    (source / "environ").symlink_to("/proc/self/environ")
    (source / "kubeconfig").symlink_to(secret)
    (source / "home").symlink_to(tmp_path)  # a linked directory: nothing below it is taken
    os.mkfifo(source / "pipe")
    chosen = tmp_path / "chosen"
    chosen.symlink_to(source)  # the directory the user named may itself be a link: theirs to choose
    proxy = VendorProxy(_settings(tmp_path, user=None, config_files=[chosen]))
    with caplog.at_level(logging.WARNING):
        proxy._prepare()
    try:
        assert proxy.config_dir is not None
        copied = sorted(str(p.relative_to(proxy.config_dir)) for p in proxy.config_dir.rglob("*"))
        assert copied == ["certs", "certs/ca.pem", "hosts", "public-ca.crt", "squid.conf"]
        assert (proxy.config_dir / "squid.conf").read_text() == f"http_port {LISTEN}:3128\n"
        assert (proxy.config_dir / "certs" / "ca.pem").read_bytes() == b"\x80binary"
        assert proxy.skipped == [f"{chosen}/environ (a symbolic link)", f"{chosen}/home (a symbolic link)",
                                 f"{chosen}/kubeconfig (a symbolic link)", f"{chosen}/pipe (not a regular file)"]
        assert "not copied into the proxy's {config_dir}" in caplog.text and f"{chosen}/kubeconfig" in caplog.text
    finally:
        proxy.remove()
    with pytest.raises(VendorProxyError, match="not a regular file or directory"):
        VendorProxy(_settings(tmp_path, user=None, config_files=[source / "pipe"]))._prepare()


FAKE_PROXY = """import socket, sys, time
config_dir, host, port, name = sys.argv[1:5]
with open(config_dir + "/access.log", "a") as log:
    log.write(f"{time.time():.3f} 1 127.10.77.1 TCP_TUNNEL/200 0 CONNECT {name}:443 - HIER_DIRECT/127.30.0.1 -\\n")
server = socket.create_server((host, int(port)), reuse_port=True)
while True:
    server.accept()[0].close()
"""


def _fake_proxy(tmp_path: Path, name: str, **overrides: object) -> VendorProxySettings:
    """A proxy that logs one tunnel to ``name`` in its {config_dir} when it starts, then listens."""
    script = tmp_path / "fake_proxy.py"
    script.write_text(FAKE_PROXY)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable  # (the proxy user's)
    return _settings(tmp_path, listen=Endpoint(LISTEN, 3140), config_files=[script],
                     command=f"{python} {{config_dir}}/fake_proxy.py {{config_dir}} {{listen_host}} {{listen_port}} "
                             f"{name}", **overrides)


async def test_a_restart_gets_a_new_config_dir_and_nothing_the_proxy_planted_is_followed(tmp_path: Path) -> None:
    # The "proxy down, then back" fault restarts the proxy. Its old {config_dir} was the proxy's:
    # a link there in place of a file the lab writes, or of one it hands to the proxy user, would
    # make root overwrite and chown whatever it points at.
    victim = tmp_path / "victim"
    victim.write_text("root's own file\n")
    victim.chmod(0o600)
    proxy = VendorProxy(_fake_proxy(tmp_path, "first.example"))
    await proxy.start()
    try:
        first = proxy.config_dir
        assert first is not None
        for name in ("public-ca.crt", "hosts", "fake_proxy.py"):
            (first / name).unlink()
            (first / name).symlink_to(victim)
        await proxy.stop()
        proxy.settings.command = proxy.settings.command.replace("first.example", "second.example")  # type: ignore[union-attr]
        (first / "fake_proxy.py").unlink()  # (the command reads it; a link to the victim would not run)
        (first / "fake_proxy.py").write_text(FAKE_PROXY)
        await proxy.start()
        assert victim.read_text() == "root's own file\n" and victim.stat().st_uid == os.geteuid()
        assert proxy.config_dir is not None and proxy.config_dir != first and not first.exists()
        # what the proxy logged before the restart is still the lab's evidence
        assert [f["host"] for f in proxy.flows()] == ["first.example", "second.example"]
        assert (tmp_path / "state" / "access.log").read_text().count("CONNECT") >= 1
    finally:
        await proxy.stop()
        proxy.remove()
    assert [f["host"] for f in proxy.flows()] == ["first.example", "second.example"]


def _flows_within(proxy: VendorProxy, seconds: float = 10) -> list[dict[str, object]]:
    """``proxy.flows()``, failing (not hanging) if it blocks."""
    outcome: list[list[dict[str, object]]] = []
    reader = threading.Thread(target=lambda: outcome.append(proxy.flows()), daemon=True)
    reader.start()
    reader.join(seconds)
    assert outcome, "reading the access log blocked"
    return outcome[0]


def test_the_access_log_is_read_without_following_a_link_and_never_from_a_fifo(tmp_path: Path) -> None:
    secret = tmp_path / "secret.log"  # a root-only file that happens to look like an access log
    secret.write_text("1700000000.000 1 127.10.77.1 TCP_TUNNEL/200 0 CONNECT secret.example:443 - HIER_DIRECT/x -\n")
    secret.chmod(0o600)
    proxy = VendorProxy(_settings(tmp_path, user=None))
    proxy._prepare()
    try:
        assert proxy.config_dir is not None
        log_path = proxy.config_dir / "access.log"
        log_path.write_text(secret.read_text().replace("secret.example", "origin.example"))
        assert [f["host"] for f in _flows_within(proxy)] == ["origin.example"]
        log_path.unlink()
        log_path.symlink_to(secret)
        assert _flows_within(proxy) == []
        log_path.unlink()
        os.mkfifo(log_path)  # nobody writes it: an open for reading would wait forever
        assert _flows_within(proxy) == []
    finally:
        proxy.remove()


def test_credentials_are_percent_encoded_in_the_proxy_url(tmp_path: Path) -> None:
    auth = "vendor:p/a#s@s%w?o:rd é"
    proxy = VendorProxy(_settings(tmp_path, user=None, auth=auth, tls_port=3129))
    for url in (proxy.url("proxy.corp.internal"), proxy.https_url("proxy.corp.internal")):
        parts = urlsplit(url)
        assert (parts.hostname, parts.path, parts.query, parts.fragment) == ("proxy.corp.internal", "", "", "")
        assert f"{unquote(parts.username or '')}:{unquote(parts.password or '')}" == auth
        assert "p/a#s" not in redact_text(url) and "rd" not in redact_text(url).split("@")[0]
    assert proxy.url("p") == "http://vendor:p%2Fa%23s%40s%25w%3Fo%3Ard%20%C3%A9@p:3128"
    powershell = VendorProxy(_settings(tmp_path, user=None, auth="o'brien:pa$(x)"))
    assert powershell.url("p") == "http://o'brien:pa$(x)@p:3128"  # carried as written, byte for byte


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another user needs root")
def test_the_configuration_is_handed_to_the_proxy_user(tmp_path: Path) -> None:
    proxy = VendorProxy(_settings(tmp_path, user="proxy"))
    proxy._prepare()
    try:
        assert proxy.config_dir is not None
        owner = pwd.getpwnam("proxy").pw_uid
        for path in (proxy.config_dir, proxy.config_dir / "squid.conf", proxy.config_dir / "hosts"):
            assert path.stat().st_uid == owner
        text = (proxy.config_dir / "squid.conf").read_text()
        assert f"http_port {LISTEN}:3128" in text and f"hosts_file {proxy.config_dir}/hosts" in text
        assert f"tcp_outgoing_address {EGRESS}" in text and "{" not in text.split("\n", 5)[-1]
        with pytest.raises(VendorProxyError, match="does not exist"):
            VendorProxy(_settings(tmp_path, user="no-such-user-here"))._prepare()
    finally:
        proxy.remove()


class Origin:
    """A plain-HTTP origin on port 80 of its own loopback address, logging who connected."""

    def __init__(self) -> None:
        self.sources: list[str] = []
        self.server: asyncio.AbstractServer | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sources.append(writer.get_extra_info("peername")[0])
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        await writer.drain()
        writer.close()


@pytest_asyncio.fixture
async def origin() -> AsyncIterator[Origin]:
    found = Origin()
    found.server = await asyncio.start_server(found.handle, ORIGIN, 80)
    yield found
    found.server.close()
    await found.server.wait_closed()


async def _get(url: str, credentials: str | None = None) -> tuple[int, str]:
    """An absolute-form GET through the proxy, from a node-like address."""
    reader, writer = await asyncio.open_connection(LISTEN, 3128, local_addr=("127.10.77.1", 0))
    auth = f"Proxy-Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n" if credentials else ""
    writer.write(f"GET {url} HTTP/1.1\r\nHost: origin.example\r\n{auth}Connection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


@needs_squid
@needs_real_ports
async def test_squid_reaches_origins_by_the_lab_names_and_leaves_from_the_egress_address(
        tmp_path: Path, origin: Origin) -> None:
    proxy = VendorProxy(_settings(tmp_path))
    await proxy.start()
    try:
        assert proxy.running and proxy.started_seconds is not None
        assert await _get("http://origin.example/") == (200, "hello")
        assert origin.sources == [EGRESS]  # the lab's egress address, as the origins' firewall expects
        status, _ = await _get("http://not-in-the-hosts-file.example/")
        assert status in (403, 503)  # refused: no name outside the lab table, nothing leaves loopback
        assert await proxy.settle()
        flows = proxy.flows()
        assert [(f["client"], f["host"], f["status"]) for f in flows if f["host"] == "origin.example"] == \
            [("127.10.77.1", "origin.example", 200)]
    finally:
        await proxy.stop()
    kept = tmp_path / "state" / "access.log"
    assert kept.exists() and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert not proxy.running
    proxy.remove()
    assert proxy.config_dir is None


def _htpasswd(directory: Path, user: str, password: str) -> Path:
    # The password goes to openssl on stdin, never on a command line.
    hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=password, capture_output=True,
                            text=True, check=True).stdout.strip()
    path = directory / "passwd"
    path.write_text(f"{user}:{hashed}\n")
    return path


@needs_squid
@needs_real_ports
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
async def test_squid_with_basic_authentication_answers_407_without_or_with_wrong_credentials(
        tmp_path: Path, origin: Origin) -> None:
    passwd = _htpasswd(tmp_path, "vendor", "s3cret")
    proxy = VendorProxy(_settings(tmp_path, "squid-basic-auth.conf",
                                  config_files=[EXAMPLES / "squid-basic-auth.conf", passwd], auth="vendor:s3cret"))
    await proxy.start()
    try:
        assert (await _get("http://origin.example/"))[0] == 407
        assert (await _get("http://origin.example/", "vendor:wrong"))[0] == 407
        assert await _get("http://origin.example/", "vendor:s3cret") == (200, "hello")
        assert await proxy.settle()
        assert [f["status"] for f in proxy.flows() if f["host"] == "origin.example"] == [407, 407, 200]
        assert "s3cret" not in proxy.url(with_credentials=False)
    finally:
        await proxy.stop()
        proxy.remove()


@needs_squid
@needs_real_ports
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="a mount namespace needs root")
async def test_a_proxy_that_reads_only_etc_hosts_gets_the_lab_names_in_its_own_namespace(
        tmp_path: Path, origin: Origin) -> None:
    config = tmp_path / "squid.conf"  # no hosts_file directive: Squid reads /etc/hosts
    config.write_text("\n".join(line for line in (EXAMPLES / "squid.conf").read_text().splitlines()
                                if not line.startswith("hosts_file")))
    proxy = VendorProxy(_settings(tmp_path, config_files=[config], own_etc_hosts=True))
    await proxy.start()
    try:
        assert await _get("http://origin.example/") == (200, "hello")
        assert "origin.example" not in Path("/etc/hosts").read_text()  # the machine keeps its own
    finally:
        await proxy.stop()
        proxy.remove()


@needs_squid
@pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/shm").is_dir(),
                    reason="needs root (Squid then runs as `proxy`, who cannot remove root's files) and /dev/shm")
async def test_squids_started_side_by_side_name_their_shared_memory_apart(tmp_path: Path) -> None:
    """Squid names its shared memory segments after its service name, and exits at start-up when
    it cannot make them its own: with ``-n {instance}`` two Squids never meet there."""
    proxies = [VendorProxy(_settings(tmp_path / str(i), listen=Endpoint(LISTEN, 3128 + i))) for i in range(2)]
    try:
        for proxy in proxies:
            await proxy.start()
        for proxy in proxies:
            assert Path(f"/dev/shm/{proxy.instance}-cf__metadata.shm").exists()
    finally:
        for proxy in proxies:
            await proxy.stop()
            proxy.remove()
    # A segment another user holds under its name: Squid cannot replace it, says so in its
    # cache.log, and the error names where that log is kept.
    blocked = VendorProxy(_settings(tmp_path / "blocked"))
    taken = Path(f"/dev/shm/{blocked.instance}-cf__metadata.shm")
    taken.write_bytes(b"")
    try:
        with pytest.raises(VendorProxyError, match="exited during start-up") as raised:
            await blocked.start()
    finally:
        taken.unlink()
    [kept] = _named_logs(str(raised.value))
    try:
        assert kept.name == "cache.log"
        assert f"FATAL: Ipc::Mem::Segment::create failed to shm_open(/{blocked.instance}-" in kept.read_text()
    finally:
        shutil.rmtree(kept.parent)
    # a Squid that stops removes its own
    assert not [path for proxy in proxies for path in Path("/dev/shm").glob(f"{proxy.instance}-*")]


def test_etc_hosts_wrapping_mounts_first_then_drops_privileges() -> None:
    if os.geteuid() != 0:
        with pytest.raises(VendorProxyError, match="needs root"):
            private_etc_hosts(["squid"], Path("/x/hosts"), None)
        return
    argv = private_etc_hosts(["squid", "-N"], Path("/x/hosts"), "0:0")
    assert argv[:2] == ["unshare", "--mount"] and "/x/hosts" in argv
    assert argv.index("setpriv") < argv.index("squid") and argv[-2:] == ["squid", "-N"]
    with pytest.raises(VendorProxyError, match="--proxy-etc-hosts is for a proxy process"):
        VendorProxySpec(image="x", command="squid", own_etc_hosts=True)


def test_the_access_log_is_read_in_the_format_asked_for(tmp_path: Path) -> None:
    # tinyproxy 1.11.1's own log (LogLevel Connect): not Squid's layout, read only as tinyproxy's
    lines = ("CONNECT   Nov 25 21:16:37.449 [3144]: Connect (file descriptor 5): 127.10.0.1\n"
             "CONNECT   Nov 25 21:16:37.449 [3144]: Request (file descriptor 5): CONNECT quay.io:443 HTTP/1.1\n")
    flows = {}
    for log_format in ("tinyproxy", "squid", "auto"):
        proxy = VendorProxy(_settings(tmp_path / log_format, user=None, access_log="{config_dir}/tinyproxy.log",
                                      log_format=log_format))
        proxy._prepare()
        try:
            assert proxy.config_dir is not None
            (proxy.config_dir / "tinyproxy.log").write_text(lines)
            flows[log_format] = [(f["client"], f["host"], f["format"]) for f in _flows_within(proxy)]
        finally:
            proxy.remove()
    assert flows == {"tinyproxy": [("127.10.0.1", "quay.io", "tinyproxy")], "squid": [],
                     "auto": [("127.10.0.1", "quay.io", "tinyproxy")]}


# A "proxy" that works (burns CPU) for a while before it listens, as Squid does loading its bundle on
# a busy machine, and one that sits idle and never listens.
_WORKS_THEN_LISTENS = """
import socket, sys, time
end = time.process_time() + float(sys.argv[3])
while time.process_time() < end:
    pass
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
while True:
    server.accept()[0].close()
"""


async def test_a_proxy_still_working_at_its_start_up_limit_is_given_its_time(tmp_path: Path) -> None:
    script = tmp_path / "slow-proxy.py"
    script.write_text(_WORKS_THEN_LISTENS)
    proxy = VendorProxy(_settings(tmp_path, command=f"{sys.executable} {script} {{listen_host}} {{listen_port}} 1.5",
                                  config_files=[], user=None))
    try:
        await proxy.start(startup_limit=0.2)  # 1.5 s of CPU before it listens: far past the limit
        assert proxy.running
    finally:
        await proxy.stop()
        proxy.remove()


async def test_a_proxy_idle_past_its_start_up_limit_is_reported_with_what_it_did(tmp_path: Path) -> None:
    proxy = VendorProxy(_settings(tmp_path, command="sleep 600", config_files=[], user=None))
    with pytest.raises(VendorProxyError, match=r"did not start listening on .*; waited \d+ s; it used [\d.]+ s of "
                                               r"CPU and none in the last \d+ s"):
        await proxy.start(startup_limit=0.2)
    assert not proxy.running
