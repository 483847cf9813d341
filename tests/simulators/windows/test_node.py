"""Nodes driven over real SSH with asyncssh: exec forms, auth, environment, reboot, SFTP, bad input."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time

import asyncssh
import pytest
import trustme

from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.nodessh import encoded_command
from proxyfleet.simulators.fleet import Fleet
from proxyfleet.simulators.windows.machine import LAST_STAGE
from proxyfleet.simulators.windows.sshserver import NodeSSHServer
from tests.support import connect, run_on, run_powershell, starve_loop, wait_until


async def test_only_the_authorized_key_of_the_configured_user_gets_in(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    with pytest.raises(asyncssh.PermissionDenied):
        await connect(fleet, node, username="Guest")
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    known = asyncssh.import_known_hosts(f"[{node.address}]:{node.port} {node.host_key_openssh}\n")
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(node.address, node.port, username="Administrator", client_keys=[stranger],
                               known_hosts=known, agent_path=None, config=[])
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(node.address, node.port, username="Administrator", password="hunter2",
                               client_keys=[], known_hosts=known, agent_path=None, config=[])
    async with await connect(fleet, node, username="administrator") as conn:  # case-insensitive
        assert (await conn.run("whoami")).stdout.strip() == f"{node.name}\\administrator"


async def test_machine_variable_reaches_services_only_after_reboot(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    await run_on(fleet, node, "[Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://proxy.lab:3128', 'Machine')")
    seen = await run_on(fleet, node, "$env:HTTP_PROXY")
    assert seen.stdout.strip() == "http://proxy.lab:3128"  # a new session sees it at once
    restarted = await run_on(fleet, node, "Restart-Service containerd -Force")
    assert restarted.exit_status == 0
    assert "HTTP_PROXY" not in node.process_environment("containerd")  # type: ignore[operator]
    first_boot = node.boots[-1].boot_id
    async with await connect(fleet, node) as conn:
        result = await conn.run("Restart-Computer -Force")
        assert result.exit_status == 0
        await wait_until(lambda: conn.is_closed(), what="the reboot to drop the session")
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening,
                     what="the node to come back")
    await wait_until(lambda: node.process_environment("containerd") is not None, what="containerd's boot stage")
    assert node.process_environment("containerd")["HTTP_PROXY"] == "http://proxy.lab:3128"  # type: ignore[index]
    assert node.outages and node.outages[-1].up_at is not None


async def test_a_rebooting_node_refuses_connections(fleet: Fleet) -> None:
    node = fleet.nodes[1]
    fleet.nodes[1].config.reboot_duration = 1.0
    before = await run_on(fleet, node, "(Get-CimInstance Win32_OperatingSystem).LastBootUpTime.ToString('o')")
    await run_on(fleet, node, "Restart-Computer -Force")
    await wait_until(lambda: not node.is_listening, what="the node to go down")
    with pytest.raises(OSError):
        await connect(fleet, node)
    await wait_until(lambda: node.is_listening, what="the node to come back")
    after = await run_on(fleet, node, "(Get-CimInstance Win32_OperatingSystem).LastBootUpTime.ToString('o')")
    assert after.stdout != before.stdout


def _port_holder() -> socket.socket:
    """A socket that takes a port from sshd. SO_REUSEADDR so that the sessions sshd just cut, still
    in TIME_WAIT on that port (which side closed first depends on the machine's load), do not stop
    it binding; listening, so that sshd (which binds with SO_REUSEADDR too) cannot share it."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return holder


def _hold(holder: socket.socket, address: str, port: int) -> None:
    holder.bind((address, port))
    holder.listen()


async def test_sshd_is_started_again_while_an_outgoing_connection_holds_its_port(
        fleet: Fleet, caplog: pytest.LogCaptureFixture) -> None:
    # The machine's own outgoing connections leave from its address with ephemeral ports: one may
    # take the SSH port while the node is down. sshd then fails at boot and is started again (as
    # Windows' service recovery does) instead of leaving the machine up and unreachable for good.
    node = fleet.nodes[1]
    first_boot = node.boots[-1].boot_id
    holder = _port_holder()
    node.down_listeners.append(lambda _node: _hold(holder, node.address, node.port))
    try:
        await run_on(fleet, node, "Restart-Computer -Force")
        await wait_until(lambda: node.boots[-1].boot_id != first_boot
                         and "sshd cannot listen" in caplog.text, what="sshd failing at boot")
        assert not node.is_listening
    finally:
        holder.close()  # the connection ends
    await wait_until(lambda: node.is_listening, what="sshd started again")
    assert (await run_on(fleet, node, "$env:COMPUTERNAME")).exit_status == 0


async def test_an_outage_ends_with_sshd_started_again_while_its_port_is_held(
        fleet: Fleet, caplog: pytest.LogCaptureFixture) -> None:
    node = fleet.nodes[1]
    await node.go_offline()
    holder = _port_holder()
    _hold(holder, node.address, node.port)
    try:
        back = asyncio.get_running_loop().create_task(node.come_online(), name="come online")
        await wait_until(lambda: "sshd cannot listen" in caplog.text, what="sshd failing at the outage's end")
        assert not node.is_listening and not back.done()
    finally:
        holder.close()
    await asyncio.wait_for(back, 30)
    assert node.is_listening
    assert (await run_on(fleet, node, "$env:COMPUTERNAME")).exit_status == 0


async def test_a_connection_reaching_sshd_after_it_stopped_is_cut(fleet: Fleet) -> None:
    # asyncio hands an accepted connection to its protocol one loop turn after accepting it, so one
    # accepted just before a reboot closed the listener reached sshd afterwards. Served, it kept
    # the listener's wait_closed() (3.12.1+) waiting as long as its client held it: the reboot
    # never finished and the node stayed unreachable. sshd's own policy on a spare listener stands
    # in for the closed one here (the turn itself cannot be timed from a test).
    node = fleet.nodes[1]
    spare = await asyncssh.listen(host=node.address, port=0, server_factory=lambda: NodeSSHServer(node),
                                  server_host_keys=[node.config.host_key])
    port = spare.get_port()
    known = asyncssh.import_known_hosts(f"[{node.address}]:{port} {node.host_key_openssh}\n")

    async def handshake() -> asyncssh.SSHClientConnection:
        return await asyncssh.connect(node.address, port, username=node.username, known_hosts=known,
                                      client_keys=[str(fleet.client_key_path)], agent_path=None, config=[])

    try:
        await node.go_offline()
        with pytest.raises((asyncssh.ConnectionLost, asyncssh.DisconnectError, ConnectionError)):
            await asyncio.wait_for(handshake(), 30)
        assert not node.connections
        await node.come_online()
        async with await asyncio.wait_for(handshake(), 30):
            assert len(node.connections) == 1
    finally:
        spare.close()


async def test_a_reboot_cuts_sessions_that_stay_open(fleet: Fleet) -> None:
    # An idle client (a judge's probe, kubectl exec, a human) must not hold the machine up: since
    # Python 3.12.1 a listener's wait_closed() waits for every accepted connection, and a node
    # that waited before cutting them never went down (the reconciler then waited forever).
    node = fleet.nodes[1]
    first_boot = node.boots[-1].boot_id
    async with await connect(fleet, node) as idle, await connect(fleet, node) as busy:
        holder = await busy.create_process("Start-Sleep -Seconds 300")
        await wait_until(lambda: node.active_sessions() >= 1, what="the long-running session")
        assert (await run_on(fleet, node, "Restart-Computer -Force")).exit_status == 0
        await wait_until(lambda: idle.is_closed() and busy.is_closed(), what="the reboot to cut both sessions")
        holder.close()
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening,
                     what="the node to come back with a new boot")


async def test_stopping_a_node_cuts_open_sessions(fleet: Fleet) -> None:
    node = fleet.nodes[1]
    async with await connect(fleet, node) as idle:
        await asyncio.wait_for(node.stop(), 10)
        await wait_until(idle.is_closed, what="the power-off to cut the session")
    assert not node.is_listening
    await node.start()


async def test_restart_without_force_is_refused_while_others_are_logged_on(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    async with await connect(fleet, node) as other:
        holder = await other.create_process("Start-Sleep -Seconds 30")
        await wait_until(lambda: node.active_sessions() >= 1, what="the other session")
        result = await run_on(fleet, node, "Restart-Computer")
        assert "other users logged on to the computer" in result.stderr
        assert node.is_listening
        holder.close()


async def test_sftp_with_windows_paths(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    bundle = trustme.CA().cert_pem.bytes()
    async with await connect(fleet, node) as conn, conn.start_sftp_client() as sftp:
        async with sftp.open("C:\\k\\ca-bundle.crt", "wb") as remote:
            await remote.write(bundle)
        async with sftp.open("/C:/k/ca-bundle.crt", "rb") as remote:
            assert await remote.read() == bundle
        assert "ca-bundle.crt" in await sftp.listdir("/C:/k")
        assert await sftp.realpath(".") == "/C:/Users/Administrator"
        with pytest.raises(asyncssh.SFTPError):
            await sftp.listdir("D:/")
        async with sftp.open("/C:/../../../../outside.txt", "wb") as remote:
            await remote.write(b"stays inside")
    on_disk = node.machine.filesystem.root / "k" / "ca-bundle.crt"
    assert on_disk.read_bytes() == bundle  # a person can inspect the node's disk
    assert (node.machine.filesystem.root / "outside.txt").exists()
    digest = hashlib.sha256(bundle).hexdigest().upper()
    hashed = await run_on(fleet, node, "(Get-FileHash C:\\k\\ca-bundle.crt).Hash")
    assert hashed.stdout.strip() == digest


async def test_bad_input_leaves_the_node_serving(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    async with await connect(fleet, node) as keeper:
        long_running = await keeper.create_process("Start-Sleep -Milliseconds 300; 'survivor'")
        huge = await run_on(fleet, node, "Write-Output '" + "x" * 40000 + "'")
        assert huge.exit_status == 1 and "too long" in huge.stderr
        unterminated = await run_on(fleet, node, "Write-Output 'oops")
        assert "The string is missing the terminator: '." in unterminated.stderr
        junk = await run_on(fleet, node, "Set-Content C:\\k\\junk.crt -Value 'junk';"
                                         "Import-Certificate -FilePath C:\\k\\junk.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
        assert "CRYPT_E_NOT_FOUND" in junk.stderr
        binary = await run_on(fleet, node, "Write-Output '\x00\x01\x1b[31m'")
        assert binary.exit_status == 0
        result = await long_running.wait()
        assert result.stdout.strip() == "survivor"
    assert (await run_on(fleet, node, "hostname")).exit_status == 0


async def test_many_concurrent_sessions_on_one_node(fleet: Fleet) -> None:
    node = fleet.nodes[0]
    async with await connect(fleet, node) as conn:
        results = await asyncio.gather(*(conn.run(f"Write-Output {i}") for i in range(20)))
    assert sorted(int(r.stdout) for r in results) == list(range(20))


async def test_restart_computer_sometimes_returns_no_exit_status(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[1]
    node.config.lost_exit_status_rate = 1.0
    first_boot = node.boots[-1].boot_id
    result = await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    assert result.exit_status is None  # the channel closed without an exit-status message
    assert node.lost_exit_statuses == 1
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="the restart")


async def test_sshd_answers_before_the_egress_services_start(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    # Stages an hour apart: what sshd answers before them cannot depend on how fast this machine
    # reaches the node (with 0.3 s, a loaded runner's handshake could arrive after the kubelet's).
    stage_seconds, node.config.service_stage_seconds = node.config.service_stage_seconds, 3600.0
    first_boot = node.boots[-1].boot_id
    try:
        await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
        await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="sshd back")
        early = await run_powershell(cmd_fleet, node, "(Get-Service kubelet).Status; (Get-Service sshd).Status")
        assert early.stdout.split() == ["Stopped", "Running"]  # the kubelet's stage has not come yet
        assert node.process_environment("kubelet") is None
        for stage in range(1, LAST_STAGE + 1):  # the node's clock reaching each stage
            node.machine.start_stage(stage)
        assert node.process_environment("windows_exporter") is not None
        assert node.process_environment("kubelet") is not None
    finally:
        node.config.service_stage_seconds = stage_seconds


async def test_the_egress_services_wait_for_the_first_look_that_is_not_the_judges(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    node.config.service_stage_seconds, node.config.service_hold_seconds = 0.05, 3600.0
    first_boot = node.boots[-1].boot_id
    await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="sshd back")
    back = time.monotonic()
    looks = 0
    async with await connect(cmd_fleet, node, key_path=cmd_fleet.observer_key_path) as judge:
        # The judge looks on its own key for far longer than the four stages take on a running loop:
        # its looks release nothing (the loop runs them, so this is host time, not a stall).
        while looks < 3 or time.monotonic() - back < 8 * node.config.service_stage_seconds:
            seen = await judge.run(encoded_command(
                "(Get-Service kubelet).Status; $null -eq (Get-Process kubelet -ErrorAction SilentlyContinue)"))
            assert seen.stdout.split() == ["Stopped", "True"], seen.stdout
            looks += 1
    assert node.process_environment("kubelet") is None and node.process_environment("windows_exporter") is None
    # The first look on the reconciler's key sees them all down, whatever the machine's speed;
    # then they start, stage by stage, without anyone looking again.
    first = await run_powershell(cmd_fleet, node, "$null -eq (Get-Process kubelet -ErrorAction SilentlyContinue)")
    assert first.stdout.strip() == "True"
    await wait_until(lambda: node.process_environment("windows_exporter") is not None, what="the last stage")


async def test_the_egress_services_start_after_the_hold_when_nobody_looks(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[1]
    node.config.service_stage_seconds, node.config.service_hold_seconds = 0.05, 0.2
    first_boot = node.boots[-1].boot_id
    await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.process_environment("kubelet") is not None,
                     what="the services after the hold, unlooked-at")
    await wait_until(lambda: node.process_environment("windows_exporter") is not None, what="the last stage")


async def test_the_shutdown_window_counts_only_time_the_lab_could_run(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    node.config.shutdown_delay = 0.3
    first_boot = node.boots[-1].boot_id
    process_monitor()  # as in a lab: the loop's stalls are measured (its first turn comes with the reboot's)
    node.request_reboot()
    await asyncio.sleep(0)  # one turn: the monitor is ticking and the shutdown window has begun
    await starve_loop(0.6)  # longer than the window it is inside
    # still answering: a reconciler stalled with the lab can still see the old boot, so one that
    # takes it for "back" is caught however slow the machine (self-test: early-reachability)
    assert node.is_listening and node.boots[-1].boot_id == first_boot
    await wait_until(lambda: not node.is_listening, what="the node to go down")
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="the node back")


async def test_a_connection_made_in_the_shutdown_window_finishes_its_first_command(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    # a window long enough for any machine to reconnect in; the command outlasts it, as a busy
    # loop makes a reconciler's first command outlast a 0.3 s window
    node.config.shutdown_delay = 2.0
    first_boot = node.boots[-1].boot_id
    await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    async with await connect(cmd_fleet, node) as again:  # a reconciler reconnecting at once
        assert node.shutdown_hold.holding == 1
        result = await again.run(encoded_command("Start-Sleep -Milliseconds 2500; 'on the old boot'"), check=False)
    # whole, with its exit status: the old boot answered it (a reconciler that takes it for
    # "back" acts on it and is caught: self-test early-reachability)
    assert (result.exit_status, result.stdout.strip()) == (0, "on the old boot")
    assert node.boots[-1].boot_id == first_boot
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="the node back")
    assert node.shutdown_hold.holding == 0


async def test_the_shutdown_waits_for_a_new_connection_at_most_its_hold(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    node.config.shutdown_delay, node.config.shutdown_hold_seconds = 0.2, 0.5
    await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    async with await connect(cmd_fleet, node) as again:
        # a first command that never ends keeps nothing up past the hold: cut, no exit status
        cut = await again.run(encoded_command("Start-Sleep -Seconds 60"), check=False)
    assert cut.exit_status is None
    await wait_until(lambda: node.is_listening and len(node.boots) == 2, what="the node back")


async def test_the_judges_connections_hold_no_shutdown(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[1]
    node.config.shutdown_delay, node.config.shutdown_hold_seconds = 0.2, 60.0
    await run_powershell(cmd_fleet, node, "Restart-Computer -Force")
    async with await connect(cmd_fleet, node, key_path=cmd_fleet.observer_key_path) as judge:
        looking = asyncio.ensure_future(judge.run(encoded_command("Start-Sleep -Seconds 60"), check=False))
        # the judge's look does not keep the node up for the 60 s hold: it goes down under it
        await wait_until(lambda: not node.is_listening, what="the node to go down under the judge's look")
        assert (await looking).exit_status is None  # cut with the node


async def test_the_outage_counts_only_time_the_lab_could_run(cmd_fleet: Fleet) -> None:
    node = cmd_fleet.nodes[0]
    node.config.shutdown_delay, node.config.reboot_duration = 0.05, 0.3
    first_boot = node.boots[-1].boot_id
    process_monitor()
    node.request_reboot()
    await wait_until(lambda: not node.is_listening, what="the node to go down")
    await starve_loop(0.6)  # longer than the window it is inside
    # still down: a reconciler stalled with the lab still meets the outage it has to wait out,
    # and one that uncordoned too early is still caught by it (self-test: early-reachability)
    assert not node.is_listening and node.boots[-1].boot_id == first_boot
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="the node back")
