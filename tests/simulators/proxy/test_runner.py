"""The real mitmdump as the lab runs it: fault modes, outages, flow logs without credentials,
Basic authentication, and a stop that leaves nothing behind."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from proxyfleet.simulators.network import PROXY_NETWORK
from proxyfleet.simulators.proxy.runner import ProxyError, ProxyServer, ProxySettings
from tests.simulators.traffic import (
    PROXY_NAME,
    TrafficLab,
    configure_containerd,
    trust_the_mitm_ca,
)
from tests.support import fill_accept_queue, run_powershell, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_fault_modes(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await trust_the_mitm_ca(lab, node)
    command = f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS https://www.example.com/"
    try:
        await lab.proxy.set_faults(bad_gateway=["www.example.*"])
        assert "response 502" in (await run_powershell(lab.fleet, node, command)).stderr
        await lab.proxy.set_faults(bad_gateway=[], refuse=True)
        assert "curl: (7)" in (await run_powershell(lab.fleet, node, command)).stderr
        state = await lab.proxy.set_faults(refuse=False, delay=0.2)
        assert state == {"refuse": False, "bad_gateway": [], "delay": 0.2}
        assert (await run_powershell(lab.fleet, node, command)).stdout.strip() == "hello from www.example.com"
    finally:
        await lab.proxy.set_faults(refuse=False, bad_gateway=[], delay=0)


async def test_proxy_down_and_back(lab: TrafficLab) -> None:
    node = lab.fleet.nodes[0]
    await configure_containerd(lab, node, proxy=lab.proxy_url, trust_mitm=True)
    await lab.proxy.go_down()
    try:
        result = await run_powershell(lab.fleet, node, "crictl pull quay.io/openshift/windows-test:latest")
        assert f"proxyconnect tcp: dial tcp {PROXY_NAME}:{lab.proxy.port}: connect: connection refused" in result.stderr
    finally:
        await lab.proxy.come_back()
    result = await run_powershell(lab.fleet, node, "crictl pull quay.io/openshift/windows-test:latest")
    assert result.exit_status == 0, result.stderr


async def test_flow_log_and_stream_file_carry_no_credentials(lab: TrafficLab, tmp_path: Path) -> None:
    from mitmproxy.io import FlowReader

    node = lab.fleet.nodes[3]
    await trust_the_mitm_ca(lab, node)
    fetched = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{lab.proxy_url}'; curl.exe -sS https://www.example.com/")
    assert fetched.exit_status == 0, fetched.stderr
    await wait_until(lambda: any(f["host"] == "www.example.com" for f in lab.proxy.flows()), what="the flow log")
    with lab.proxy.stream_path.open("rb") as handle:
        flows = list(FlowReader(handle).stream())
    assert flows, "the stream file opens with mitmproxy's reader (mitmweb --rfile)"
    fields = {"time", "kind", "client", "client_port", "connect_target", "scheme", "method", "host",
              "port", "path", "status", "intercepted", "error"}
    assert all(set(f) == fields for f in lab.proxy.flows())


async def test_proxy_authentication(lab: TrafficLab, tmp_path: Path) -> None:
    listen = lab.network.allocate(PROXY_NETWORK)
    # a password with what ends a URL's authority (/ # @), a ':' (RFC 7617 allows one) and a '%'
    secured = ProxyServer(ProxySettings(tmp_path / "auth", lab.network, lab.public_ca.cert_pem.bytes(),
                                        listen_address=listen, egress_address=lab.proxy.settings.egress_address,
                                        auth="fleet:s3cret/#@:%x", mitm_ca=lab.proxy.mitm_ca))
    async with secured:
        assert secured.pid is not None
        command_line = Path(f"/proc/{secured.pid}/cmdline").read_bytes()
        assert b"s3cret" not in command_line  # visible to every local user: the secret is in a 0600 file
        assert secured.auth_path.stat().st_mode & 0o777 == 0o600
        lab.network.add("auth-proxy.corp.internal", secured.port, secured.endpoint, "proxy")
        secured.publish_table()
        node = lab.fleet.nodes[0]
        await trust_the_mitm_ca(lab, node)
        base = f"http://auth-proxy.corp.internal:{secured.port}"
        denied = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{base}'; curl.exe -sS https://www.example.com/")
        assert "curl: (56) CONNECT tunnel failed, response 407" in denied.stderr
        url = secured.url("auth-proxy.corp.internal")  # percent-encoded: the URL parses back to the password
        assert url == f"http://fleet:s3cret%2F%23%40%3A%25x@auth-proxy.corp.internal:{secured.port}"
        allowed = await run_powershell(lab.fleet, node, f"$env:HTTPS_PROXY = '{url}';"
                                                "curl.exe -sS -v https://www.example.com/")
        assert allowed.stdout.strip() == "hello from www.example.com", allowed.stderr
        assert "s3cret" not in allowed.stderr  # the -v trace redacts the proxy URL
        log = secured.flow_log_path.read_text()
        assert "s3cret" not in log and "407" in log
        import base64

        dump = secured.stream_path.read_bytes()
        assert b"www.example.com" in dump  # the dump file has the flow, but not the Basic credentials
        assert b"s3cret" not in dump and base64.b64encode(b"fleet:s3cret") not in dump
    assert not secured.running


async def test_stopping_the_proxy_leaves_nothing_behind(lab: TrafficLab, tmp_path: Path) -> None:
    import socket

    listen = lab.network.allocate(PROXY_NETWORK)
    proxy = ProxyServer(ProxySettings(tmp_path / "p", lab.network, lab.public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=lab.proxy.settings.egress_address))
    await proxy.start()
    pid = proxy._process.pid  # type: ignore[union-attr]
    await proxy.stop()
    with socket.socket() as probe:
        # No process holds the port (SO_REUSEADDR: a connection in TIME_WAIT there is the kernel's,
        # not a process left behind; mitmdump's own listener sets it too)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((listen, proxy.port))  # the port is free again
    import os

    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert proxy.started_seconds is not None and proxy.started_seconds > 0


async def test_a_deep_state_directory_gets_a_short_socket_directory_that_goes_with_the_proxy(
        lab: TrafficLab, tmp_path: Path) -> None:
    from proxyfleet.core import owneddirs
    from proxyfleet.core.owners import current_owner

    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)  # beyond AF_UNIX's 108 bytes
    proxy = ProxyServer(ProxySettings(deep, lab.network, lab.public_ca.cert_pem.bytes(),
                                      listen_address=lab.network.allocate(PROXY_NETWORK),
                                      egress_address=lab.proxy.settings.egress_address))
    socket_dir = proxy.control_path.parent
    assert len(str(proxy.control_path)) < 108 and socket_dir.name.startswith("mitmdump-")
    # its owner is recorded beside it, so that one left by a process killed outright is swept
    assert owneddirs.recorded_owner(socket_dir.parent, socket_dir.name) == current_owner()
    await proxy.start()
    try:
        assert (await proxy.set_faults(delay=0))["delay"] == 0  # the control socket answers
        await proxy.go_down()
        assert not socket_dir.exists()  # gone with its stop
        await proxy.come_back()
        assert proxy.control_path.parent.is_dir() and (await proxy.set_faults(delay=0))["delay"] == 0
    finally:
        await proxy.stop()
    assert not proxy.control_path.parent.exists()


async def test_a_proxy_that_cannot_start_says_why_and_how_it_ended(lab: TrafficLab, tmp_path: Path) -> None:
    """mitmdump prints the error that stopped it on stdout and only "Error logged during startup,
    exiting..." on stderr: both are kept, with its exit status, so a rare start-up failure names its
    cause instead of an empty log."""
    import socket

    listen = lab.network.allocate(PROXY_NETWORK)
    with socket.socket() as taken:
        taken.bind((listen, 0))
        taken.listen()
        proxy = ProxyServer(ProxySettings(tmp_path / "p", lab.network, lab.public_ca.cert_pem.bytes(),
                                          listen_address=listen, port=taken.getsockname()[1],
                                          egress_address=lab.proxy.settings.egress_address))
        with pytest.raises(ProxyError) as raised:
            await proxy.start()
    message = str(raised.value)
    assert message.startswith("mitmdump exited during start-up (exit status 1):")
    assert "address already in use" in message and "Error logged during startup" in message
    assert not proxy.running


async def test_a_port_taken_after_it_was_chosen_is_chosen_again(lab: TrafficLab, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Between choosing a free port and mitmdump binding it, another process may take it: the lab
    chooses another instead of failing the scenario (a soak beside a test suite saw it).

    The process holding the port never accepts and its accept queue is full, so a connection to it
    hangs (SYN retries, two minutes): start-up must see mitmdump's exit without ever connecting to
    the port before mitmdump said it listens (a loaded CI machine failed this test with 'did not
    start listening' after 138 s, its wait stuck in such a connect while mitmdump had exited)."""
    import socket

    from proxyfleet.simulators.proxy import runner

    listen = lab.network.allocate(PROXY_NETWORK)
    with socket.socket() as holder, contextlib.ExitStack() as queued:
        holder.bind((listen, 0))
        holder.listen(0)
        taken = holder.getsockname()[1]
        fill_accept_queue(listen, taken, queued)
        chosen = iter([taken])
        free = runner._free_port
        monkeypatch.setattr(runner, "_free_port", lambda address: next(chosen, None) or free(address))
        proxy = ProxyServer(ProxySettings(tmp_path / "p", lab.network, lab.public_ca.cert_pem.bytes(),
                                          listen_address=listen, egress_address=lab.proxy.settings.egress_address))
        await proxy.start()
        try:
            assert proxy.port not in (0, taken) and proxy.running
        finally:
            await proxy.stop()
        # a port the lab fixed is not changed: in use, the start fails and says why
        fixed = ProxyServer(ProxySettings(tmp_path / "q", lab.network, lab.public_ca.cert_pem.bytes(),
                                          listen_address=listen, egress_address=lab.proxy.settings.egress_address))
        fixed.port = taken
        with pytest.raises(ProxyError, match="address already in use"):
            await fixed.start()


async def test_with_fork_switched_off_mitmdump_starts_in_a_fresh_interpreter(lab: TrafficLab, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``PROXYFLEET_MITMDUMP_FORK=0``: the start the fork server replaced (the README's A/B)."""
    from proxyfleet.simulators.proxy import forkserver

    monkeypatch.setenv(forkserver.SWITCH, "0")
    listen = lab.network.allocate(PROXY_NETWORK)
    proxy = ProxyServer(ProxySettings(tmp_path / "fresh", lab.network, lab.public_ca.cert_pem.bytes(),
                                      listen_address=listen, egress_address=lab.proxy.settings.egress_address))
    async with proxy:
        assert proxy.pid is not None
        assert forkserver.FRESH.encode() in Path(f"/proc/{proxy.pid}/cmdline").read_bytes().split(b"\0")
        assert (await proxy.set_faults(refuse=True))["refuse"] is True
    assert not proxy.running
