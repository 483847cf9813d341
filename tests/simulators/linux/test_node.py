"""A simulated Linux node over real SSH: OpenSSH's client and asyncssh's run a reconciler's
commands on it, streaming both ways, as its one user with a key, and nobody else gets in."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import certifi
import pytest
import trustme

from proxyfleet.core.looplag import process_monitor
from proxyfleet.simulators.linux import node as linux_node
from proxyfleet.simulators.linux.node import NO_SHELL, LinuxNode, LinuxNodeConfig
from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel
from proxyfleet.simulators.linux.nodemounts import NodeMounts, host_cannot_mount
from proxyfleet.simulators.linux.noderoot import RHCOS_NODE
from proxyfleet.simulators.linux.nodeshell import NodeCommand, start_on_node
from proxyfleet.simulators.linux.truststores import RHCOS
from tests.support import starve_loop, wait_until

CANNOT_MOUNT = host_cannot_mount()
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}")
SYSTEM_CAS = Path(certifi.where()).read_bytes()
KEY = asyncssh.generate_private_key("ssh-ed25519")
CORP_CA = trustme.CA().cert_pem.bytes()
CA_LINE = CORP_CA.decode().splitlines()[3]  # a line of the certificate's body
ANCHOR = f"{RHCOS.anchors}/corp.pem"
BUNDLE = RHCOS.bundle


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[LinuxNode]:
    running = LinuxNode(LinuxNodeConfig("worker-a", "127.0.0.1", 0, tmp_path / "worker-a",
                                        asyncssh.generate_private_key("ssh-ed25519"), [KEY.convert_to_public()],
                                        RHCOS_NODE, SYSTEM_CAS))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def connect(node: LinuxNode, key: asyncssh.SSHKey = KEY, user: str = "core") -> asyncssh.connect:
    known = asyncssh.import_known_hosts(f"[127.0.0.1]:{node.port} {node.host_key_openssh}\n")
    return asyncssh.connect("127.0.0.1", node.port, username=user, client_keys=[key], known_hosts=known)


async def test_commands_stream_both_ways_and_end_with_the_shells_status(node: LinuxNode) -> None:
    async with connect(node) as conn:
        # no input given: the command runs at once, as with OpenSSH (stdin open, unused)
        active = await conn.run("sudo systemctl is-active kubelet", check=False)
        assert (active.exit_status, active.stdout) == (0, "active\n")
        big = os.urandom(1 << 20)
        echoed = await conn.run("cat; echo done >&2; exit 7", input=big, encoding=None, check=False)
        assert (echoed.exit_status, echoed.stdout, echoed.stderr) == (7, big, b"done\n")
        process = await conn.create_process("read line; echo \"got $line\"")
        process.stdin.write("a line\n")
        assert await asyncio.wait_for(process.stdout.readline(), 30) == "got a line\n"
        await process.wait()
        refused = await conn.run(check=False)  # a shell request with no command
        assert refused.exit_status == 1 and refused.stderr == NO_SHELL
    assert node.commands_run == 3


async def test_only_its_user_with_an_authorized_key_gets_in(node: LinuxNode) -> None:
    with pytest.raises(asyncssh.PermissionDenied):
        async with connect(node, user="Core"):
            pass
    with pytest.raises(asyncssh.PermissionDenied):
        async with connect(node, key=asyncssh.generate_private_key("ssh-ed25519")):
            pass


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client (openssh-client)")
async def test_openssh_runs_a_reconcile_on_the_node(node: LinuxNode, tmp_path: Path) -> None:
    key_file = tmp_path / "id_ed25519"
    KEY.write_private_key(key_file)
    key_file.chmod(0o600)
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{node.port} {node.host_key_openssh}\n")
    script = ("set -e; sudo install -D -m 0644 /dev/stdin /etc/mco/proxy.env; "
              "sudo systemctl daemon-reload; sudo systemctl restart crio kubelet; "
              "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value crio)/environ | grep PROXY")
    drop_ins = "".join(f"mkdir -p /etc/systemd/system/{u}.d && printf '[Service]\\nEnvironmentFile=/etc/mco/proxy.env\\n'"
                       f" > /etc/systemd/system/{u}.d/10-mco-default-env.conf; " for u in RHCOS_NODE.services)
    done = await asyncio.to_thread(
        subprocess.run, ["ssh", "-i", str(key_file), "-p", str(node.port), "-o", "BatchMode=yes",
                         "-o", f"UserKnownHostsFile={tmp_path / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
                         "core@127.0.0.1", drop_ins + script],
        input="HTTPS_PROXY=http://proxy.corp.internal:3128\n", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "HTTPS_PROXY=http://proxy.corp.internal:3128\n"), done.stderr
    assert node.model.systemd.running["kubelet.service"].environment["HTTPS_PROXY"] == "http://proxy.corp.internal:3128"


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed process its new parent has not reaped yet does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


async def test_a_reboot_cuts_every_session_kills_what_ran_and_boots_with_units_read_afresh(node: LinuxNode) -> None:
    port = node.port
    heard: list[LinuxNode] = []
    node.down_listeners.append(heard.append)
    async with connect(node) as conn:
        old_id = (await conn.run("cat /proc/sys/kernel/random/boot_id", check=True)).stdout
        # a background job outlives its session, as after a real nohup (the session ends at once)
        started = await conn.run("nohup sleep 300 >/dev/null 2>&1 </dev/null & echo $!", check=True)
        background = int(started.stdout)
        assert alive(background)
        # a drop-in written and never reloaded: a reboot reads every unit afresh
        await conn.run("sudo mkdir -p /etc/systemd/system/kubelet.service.d && printf '[Service]\\n"
                       "Environment=HTTPS_PROXY=http://proxy.corp.internal:3128\\n' | "
                       "sudo tee /etc/systemd/system/kubelet.service.d/10-mco-default-env.conf >/dev/null", check=True)
        # an anchor dropped in and never extracted: RHCOS's coreos-update-ca-trust.service does it at boot
        await conn.run(f"sudo tee {ANCHOR} >/dev/null", input=CORP_CA.decode(), check=True)
        unextracted = await conn.run(f"grep -c -F -- '{CA_LINE}' {BUNDLE}", check=False)
        assert unextracted.stdout.strip() == "0"
        waiting = await conn.create_process("sleep 300")  # a session still open when the node goes down
        asked = await conn.run("sudo systemctl reboot", check=False)
        assert (asked.exit_status, asked.stdout, asked.stderr) == (0, "", "")
        await waiting.wait_closed()  # cut, with no exit status: the node went down under it
        assert waiting.exit_status is None
    await wait_until(lambda: not node.rebooting, what="the reboot")
    assert [b.number for b in node.boots] == [1, 2] and node.boots[0].shutdown_at is not None
    # the lab's evidence of the outage: asked, down, up, in that order, the asker told as it went down
    [outage] = node.outages
    assert outage.requested_at is not None and outage.up_at is not None
    assert outage.requested_at <= outage.down_at <= node.boots[0].shutdown_at <= node.boots[1].booted_at <= outage.up_at
    assert heard == [node]
    assert not alive(background)
    assert node.port == port  # sshd is back where it was
    async with connect(node) as conn:
        extracted = await conn.run(f"grep -c -F -- '{CA_LINE}' {BUNDLE}", check=True)
        assert extracted.stdout.strip() == "1"
        seen = await conn.run("cat /proc/sys/kernel/random/boot_id; systemctl show -p NeedDaemonReload --value kubelet; "
                              "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value kubelet)/environ | grep PROXY",
                              check=True)
    new_id, reload_needed, proxy = seen.stdout.splitlines()
    assert new_id != old_id.strip() and new_id.replace("-", "") == node.boots[-1].boot_id
    assert (reload_needed, proxy) == ("no", "HTTPS_PROXY=http://proxy.corp.internal:3128")


async def test_a_process_that_left_its_sessions_group_holding_its_output_ends_with_the_node(node: LinuxNode) -> None:
    # setsid takes the job out of the command's process group (which sshd's end kills) while it
    # still holds the session's output: asyncio sees the command end only when that closes. It
    # once kept a node "stopping sshd and its sessions" for good; a real power-off ends it.
    async with connect(node) as conn:
        holding = await conn.create_process("setsid sleep 300 & echo $!; wait")
        escaped = int(await asyncio.wait_for(holding.stdout.readline(), 30))
        await wait_until(lambda: os.getpgid(escaped) == escaped, what="the job's own session")
        await conn.run("sudo systemctl reboot", check=False)
        await holding.wait_closed()
    await wait_until(lambda: not node.rebooting, what="the reboot")
    assert [b.number for b in node.boots] == [1, 2] and node.reboot_failure is None
    assert not alive(escaped)


async def test_a_command_that_started_as_sshd_stopped_ends_with_the_rest(node: LinuxNode,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The command's start (a thread's /proc sync, then the process) can span sshd's stop: one that
    # came up after it was left running on a node that had gone down.
    started: list[NodeCommand] = []

    async def start_as_sshd_stops(model: LinuxNodeModel, mounts: NodeMounts, command: str) -> NodeCommand:
        await node.go_offline()
        started.append(await start_on_node(model, mounts, command))
        return started[-1]

    monkeypatch.setattr(linux_node, "start_on_node", start_as_sshd_stops)
    async with connect(node) as conn:
        with contextlib.suppress(asyncssh.Error, OSError):
            await conn.run("sleep 300", check=False)
    await wait_until(lambda: bool(started) and started[0].process.returncode is not None, what="the command's end")
    await node.come_online()


async def test_the_session_that_asked_for_a_reboot_sometimes_gets_no_exit_status(node: LinuxNode) -> None:
    node.config.lost_exit_status_rate = 1.0
    async with connect(node) as conn:
        asked = await conn.run("sudo reboot", check=False)
    assert asked.exit_status is None  # the channel closed without an exit-status message
    assert node.lost_exit_statuses == 1
    await wait_until(lambda: len(node.boots) == 2 and node.is_listening, what="the reboot")


async def test_only_an_immediate_reboot_is_modelled_and_a_refusal_says_so(node: LinuxNode) -> None:
    async with connect(node) as conn:
        for command, said in [
            ("sudo shutdown -r +5", "proxyfleet's simulated shutdown does not model '-r +5'"),
            ("sudo reboot -f", "proxyfleet's simulated reboot does not model '-f'"),
            ("sudo halt", "proxyfleet's simulated node does not model halting or powering off"),
            ("sudo systemctl poweroff", "proxyfleet's simulated systemctl does not model 'poweroff'"),
        ]:
            refused = await conn.run(command, check=False)
            assert (refused.exit_status, refused.stderr[:len(said)]) == (1, said), command
    assert not node.rebooting and len(node.boots) == 1


async def test_commands_starting_while_the_node_powers_off_never_fail_its_reboot(node: LinuxNode) -> None:
    # A command's start brings /proc up to date while the power-off empties it: without taking turns,
    # the two met halfway through one rmtree (FileNotFoundError) and the node never came back.
    async def keep_starting() -> None:
        while True:
            try:
                async with connect(node) as conn:
                    while True:
                        await conn.run("true", check=False)
            except (asyncssh.Error, OSError):
                await asyncio.sleep(0.05)  # down: try again, as a reconciler's looks do

    starters = [asyncio.ensure_future(keep_starting()) for _ in range(6)]
    try:
        for _ in range(3):
            boots = len(node.boots)
            await wait_until(lambda: node.commands_run > 20 * (len(node.boots)), what="commands running")
            node.request_reboot()
            await wait_until(lambda: not node.rebooting, what="the reboot")
            assert node.reboot_failure is None and node.reboot_phase is None
            assert len(node.boots) == boots + 1 and node.is_listening
    finally:
        for starter in starters:
            starter.cancel()
        await asyncio.gather(*starters, return_exceptions=True)


async def test_a_reboot_set_to_hang_goes_down_and_never_comes_back_saying_where_it_is(node: LinuxNode) -> None:
    gated: list[LinuxNode] = []
    node.reboot_gate = lambda n: gated.append(n) is None  # asked once, as the reboot begins: hang it
    async with connect(node) as conn:
        await conn.run("sudo systemctl reboot", check=False)
    await wait_until(lambda: node.reboot_phase is not None and node.reboot_phase[0].startswith("hung"),
                     what="the reboot to hang")
    assert gated == [node] and not node.is_listening and node.rebooting
    assert len(node.boots) == 1 and node.outages[-1].up_at is None  # down, no new boot
    assert node.reboot_failure is None  # a fault the scenario set, not the lab's own
    node.reboot_gate = None


async def test_the_next_reboot_hangs_once_then_reboots_are_ordinary(node: LinuxNode) -> None:
    node.hang_next_reboot()
    assert node.watch.hangs() and not node.watch.hangs()  # used up by the first reboot that asks


async def test_off_the_network_sessions_are_cut_and_refused_while_the_machine_runs_on(node: LinuxNode) -> None:
    heard: list[LinuxNode] = []
    node.down_listeners.append(heard.append)
    async with connect(node) as conn:
        waiting = await conn.create_process("sleep 300")
        await node.go_offline()
        await waiting.wait_closed()
    with pytest.raises(OSError):
        async with connect(node):
            pass
    assert heard == [node] and node.outages[-1].requested_at is None  # an outage, not a reboot
    assert len(node.boots) == 1 and not node.rebooting
    await node.come_online()
    assert node.outages[-1].up_at is not None
    async with connect(node) as conn:
        active = await conn.run("systemctl is-active kubelet", check=False)
    assert active.stdout == "active\n"  # it ran all along


async def test_a_new_host_key_is_shown_by_the_same_node_with_no_outage(node: LinuxNode) -> None:
    old = node.host_key_openssh
    await node.replace_host_key()
    assert node.host_key_openssh != old and not node.outages
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        known = asyncssh.import_known_hosts(f"[127.0.0.1]:{node.port} {old}\n")
        async with asyncssh.connect("127.0.0.1", node.port, username="core", client_keys=[KEY], known_hosts=known):
            pass
    async with connect(node) as conn:  # the new key
        assert (await conn.run("true", check=False)).exit_status == 0


async def test_the_shutdown_window_counts_only_time_the_lab_could_run(node: LinuxNode) -> None:
    node.config.shutdown_delay = 0.3
    process_monitor()  # as in a lab: the loop's stalls are measured (its first turn comes with the reboot's)
    node.request_reboot()
    await asyncio.sleep(0)  # one turn: the monitor is ticking and the units have begun to stop
    await starve_loop(0.6)  # longer than the window it is inside
    assert node.is_listening  # sshd still answers, as a Windows node's does (see its test)
    await wait_until(lambda: not node.is_listening, what="the node to go down")
    await wait_until(lambda: node.is_listening, what="the node back")


async def test_a_connection_made_in_the_shutdown_window_finishes_its_first_command(node: LinuxNode) -> None:
    node.config.shutdown_delay = 2.0  # long enough to reconnect in on any machine; the command outlasts it
    first_boot = node.boots[-1].boot_id
    async with connect(node) as asker:
        assert (await asker.run("sudo systemctl reboot", check=False)).exit_status == 0
    async with connect(node) as again:  # a reconciler reconnecting at once (as a Windows node's test)
        assert node.shutdown_hold.holding == 1
        result = await again.run("sleep 2.5; cat /proc/sys/kernel/random/boot_id", check=False)
    assert result.exit_status == 0 and str(result.stdout).strip().replace("-", "") == first_boot.replace("-", "")  # the old boot answered it whole
    await wait_until(lambda: node.boots[-1].boot_id != first_boot and node.is_listening, what="the node back")


async def test_the_shutdown_waits_for_a_new_connection_at_most_its_hold(node: LinuxNode) -> None:
    node.config.shutdown_delay, node.config.shutdown_hold_seconds = 0.2, 0.5
    async with connect(node) as asker:
        await asker.run("sudo systemctl reboot", check=False)
    async with connect(node) as again:
        cut = await again.run("sleep 60", check=False)  # a first command that never ends holds only so long
    assert cut.exit_status is None
    await wait_until(lambda: node.is_listening and len(node.boots) == 2, what="the node back")


async def test_the_outage_counts_only_time_the_lab_could_run(node: LinuxNode) -> None:
    node.config.shutdown_delay, node.config.reboot_duration = 0.05, 0.3
    process_monitor()
    node.request_reboot()

    def off() -> bool:
        return node.reboot_phase is not None and node.reboot_phase[0] == "off"

    await wait_until(off, what="the node off")
    await starve_loop(0.6)  # longer than the window it is inside
    assert off()  # still off, as a Windows node stays down (see its test)
    await wait_until(lambda: node.is_listening, what="the node back")
