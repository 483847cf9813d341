"""A reconciler's shell text on a simulated Linux node: real sh and coreutils on the node's tree,
systemctl and update-ca-trust answered by the node's model, in their own words."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import certifi
import pytest
import trustme

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.linux import nodeshell
from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel
from proxyfleet.simulators.linux.nodemounts import NodeMounts, host_cannot_mount, process_summary
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE, Flavour, create_root
from proxyfleet.simulators.linux.nodeshell import (
    ChannelError,
    NodeCommandStuck,
    install_commands,
    parse_requests,
    process_start_time,
    run_on_node,
    start_on_node,
)
from proxyfleet.simulators.linux.servicemanager import ServiceManager, changed_on_disk
from proxyfleet.simulators.linux.truststores import DEBIAN, RHCOS
from tests.simulators.linux.namespaces import mounted
from tests.support import wait_until

CANNOT_MOUNT = host_cannot_mount()
needs_root = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}")
SYSTEM_CAS = Path(certifi.where()).read_bytes()


def booted(tmp_path: Path, flavour: Flavour) -> tuple[LinuxNodeModel, NodeMounts]:
    root = tmp_path / "node"
    create_root(root, flavour, SYSTEM_CAS, "worker-a")
    model = LinuxNodeModel(root, flavour, ServiceManager(root, hostname="worker-a"), time.monotonic)
    model.systemd.boot(flavour.enabled)
    mounts = NodeMounts(root)
    mounts.prepare()
    install_commands(model)
    mounted(mounts)
    model.use_root(mounts.view)
    return model, mounts


def test_requests_are_taken_whole_whatever_bytes_their_arguments_hold() -> None:
    buffer = bytearray(b"41\x002\x00systemctl\x00restart\x00it's \"x\"\ny\x0042\x000\x00update-ca-trust\x00")
    assert parse_requests(buffer) == [(41, "systemctl", ["restart", "it's \"x\"\ny"]), (42, "update-ca-trust", [])]
    assert buffer == b""
    partial = bytearray(b"43\x002\x00systemctl\x00restart\x00")
    assert parse_requests(partial) == [] and partial.startswith(b"43")  # the rest is still coming
    with pytest.raises(ChannelError, match="not a node command's request on fd 9"):
        parse_requests(bytearray(b"hello\x00there\x00a\x00b\x00"))


RECONCILE = """set -e
printf 'HTTP_PROXY=http://proxy.corp.internal:3128\\n' > /etc/mco/proxy.env
mkdir -p /etc/systemd/system/kubelet.service.d
printf '[Service]\\nEnvironmentFile=/etc/mco/proxy.env\\n' > /etc/systemd/system/kubelet.service.d/10-mco-default-env.conf
systemctl restart kubelet
"""


@needs_root
async def test_a_restart_without_daemon_reload_is_warned_and_keeps_the_old_environment(tmp_path: Path) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)
    done = await run_on_node(model, mounts, RECONCILE)
    assert done.code == 0 and done.stderr.decode() == changed_on_disk("kubelet.service") + "\n"
    assert "HTTP_PROXY" not in model.systemd.running["kubelet.service"].environment
    fixed = await run_on_node(model, mounts, "systemctl daemon-reload && systemctl restart kubelet.service && "
                                             "systemctl is-active kubelet crio")
    assert (fixed.code, fixed.stdout, fixed.stderr) == (0, b"active\nactive\n", b"")
    assert model.systemd.running["kubelet.service"].environment["HTTP_PROXY"] == "http://proxy.corp.internal:3128"


@needs_root
async def test_systemctl_refuses_in_its_own_words(tmp_path: Path) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)
    for command, code, said in [
        ("systemctl frob", 1, "Unknown command verb frob.\n"),
        ("systemctl restart", 1, "Too few arguments.\n"),
        ("systemctl --frob restart kubelet", 1, "systemctl: unrecognized option '--frob'\n"),
        ("systemctl restart containerd", 5, "Failed to restart containerd.service: Unit containerd.service not found.\n"),
        ("systemctl status kubelet", 1, "proxyfleet's simulated systemctl does not model 'status'"),
    ]:
        done = await run_on_node(model, mounts, command)
        assert (done.code, done.stderr.decode()[:len(said)]) == (code, said), command
    stopped = await run_on_node(model, mounts, "systemctl stop crio; systemctl is-active crio")
    assert (stopped.code, stopped.stdout) == (3, b"inactive\n")


@needs_root
async def test_node_commands_run_in_the_background_take_turns(tmp_path: Path) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)
    done = await run_on_node(model, mounts, "systemctl stop crio & systemctl stop kubelet & wait; "
                                            "systemctl is-active crio kubelet")
    assert (done.code, done.stdout, done.stderr) == (3, b"inactive\ninactive\n", b"")


@needs_root
async def test_an_anchor_is_trusted_once_the_flavours_own_command_ran(tmp_path: Path) -> None:
    proxy_ca = trustme.CA(organization_name="corp proxy CA").cert_pem.bytes()
    thumbprint = certificates_in_bundle(proxy_ca)[0].thumbprint
    for flavour, anchor, command in [
        (RHCOS_NODE, f"{RHCOS.anchors}/openshift-config-user-ca-bundle.crt", "update-ca-trust"),
        (DEBIAN_NODE, f"{DEBIAN.anchors}/proxy-ca.crt", "update-ca-certificates"),
    ]:
        model, mounts = booted(tmp_path / flavour.name, flavour)
        bundle = model.root / flavour.trust.bundle.lstrip("/")
        placed = await run_on_node(model, mounts, f"cat > {anchor}", stdin=proxy_ca)
        assert placed.code == 0, placed.stderr
        assert thumbprint not in {c.thumbprint for c in certificates_in_bundle(bundle.read_bytes())}  # not yet
        done = await run_on_node(model, mounts, command)
        assert done.code == 0, done.stderr
        assert thumbprint in {c.thumbprint for c in certificates_in_bundle(bundle.read_bytes())}, flavour.name
        assert not Path(anchor).exists()  # the host's own store untouched
    missing = await run_on_node(model, mounts, "update-ca-trust")  # Debian has no such command
    assert missing.code == 127 and b"update-ca-trust: not found" in missing.stderr


@needs_root
async def test_a_services_environment_is_read_from_proc_as_on_a_real_node(tmp_path: Path) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)
    read = ("pid=$(systemctl show -p MainPID --value kubelet); cat /proc/$pid/comm; "
            "tr '\\0' '\\n' < /proc/$pid/environ | grep -E '^(ID|HTTP_PROXY)='")
    before = await run_on_node(model, mounts, read)
    assert before.stdout == b'kubelet\nID=rhcos\n', before.stderr
    old_pid = model.systemd.running["kubelet.service"].pid
    done = await run_on_node(model, mounts, RECONCILE.replace("systemctl restart kubelet",
                                                              "systemctl daemon-reload; systemctl restart kubelet"))
    assert done.code == 0, done.stderr
    after = await run_on_node(model, mounts, read + f"; test -d /proc/{old_pid} || echo gone")
    assert after.stdout == b"kubelet\nID=rhcos\nHTTP_PROXY=http://proxy.corp.internal:3128\ngone\n", after.stderr
    shown = await run_on_node(model, mounts, "systemctl show -p ActiveState,NeedDaemonReload kubelet crio")
    assert shown.stdout == b"ActiveState=active\nNeedDaemonReload=no\n\nActiveState=active\nNeedDaemonReload=no\n"
    # the files the manager loaded each unit from (what a judge reads a real node's units by)
    paths = await run_on_node(model, mounts, "systemctl show -p FragmentPath,DropInPaths kubelet crio")
    assert paths.stdout == (b"FragmentPath=/usr/lib/systemd/system/kubelet.service\n"
                            b"DropInPaths=/etc/systemd/system/kubelet.service.d/10-mco-default-env.conf\n\n"
                            b"FragmentPath=/usr/lib/systemd/system/crio.service\nDropInPaths=\n"), paths.stderr
    listed = await run_on_node(model, mounts, "ls /proc | grep '^[0-9]' | sort -n; readlink /dev/stdin; "
                                              "echo through-stdin | cat /dev/stdin")
    pids = sorted(p.pid for p in model.systemd.running.values())
    assert listed.stdout.decode().split("\n") == [*map(str, pids), "/proc/self/fd/0", "through-stdin", ""]
    refused = await run_on_node(model, mounts, "systemctl show kubelet")
    assert refused.code == 1 and b"shows only the properties asked for with -p" in refused.stderr


@needs_root
async def test_a_node_command_the_model_fails_on_is_answered_not_left_waiting(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)

    def broken(*args: object) -> None:
        raise RuntimeError("the model broke")

    monkeypatch.setattr("proxyfleet.simulators.linux.nodeshell.run_command", broken)
    done = await run_on_node(model, mounts, "systemctl restart kubelet; echo after $?")
    assert done.stdout == b"after 1\n"
    assert done.stderr == b"systemctl: internal error in the simulated node; see the lab log\n"


def _host_command_lines() -> list[bytes]:
    """Every process's argv on this host, as ``ps`` shows it to any user."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes())
            except OSError:  # ended meanwhile
                continue
    return found


@needs_root
async def test_a_commands_text_is_on_no_command_line_of_the_host(tmp_path: Path) -> None:
    # ps shows every process's argv to every user of the lab's host, and a reconciler's command
    # can carry a proxy's password: the text reaches the node's shell through a descriptor
    model, mounts = booted(tmp_path, RHCOS_NODE)
    secret = "s3cret-" + "9f41c2"
    command = (f"printf 'HTTPS_PROXY=http://user:{secret}@proxy.corp:3128\\n' > /etc/mco/proxy.env\n"
               "IFS= read -r line\necho \"got $line\"")
    running = await start_on_node(model, mounts, command)
    try:
        # the command has written its file and waits on its input: every part of it is running
        written = model.root / "etc/mco/proxy.env"
        await wait_until(lambda: written.exists() and written.stat().st_size > 0, what="the command's file")
        assert [line for line in _host_command_lines() if secret.encode() in line] == []
        stdout, stderr = await running.process.communicate(b"more\n")
        assert (await running.finished(), stdout, stderr) == (0, b"got more\n", b"")
    finally:
        await running.close()
    assert secret in (model.root / "etc/mco/proxy.env").read_text()


@needs_root
@pytest.mark.parametrize("command", [
    "echo \"$0\" $#; exit 3",
    "printf '%s|' 'it'\"'\"'s' \"a  b\" $((6*7)); echo",
    "set -e; false; echo not reached",
    "if true; then\n  echo multi\nfi\n\n\n",
    "x=1; f() { echo \"in f $x $1\"; return 4; }; f arg",
    "",
    "cat <&8; echo \"fd 8: $?\"; echo \"left: ${proxyfleet_command-unset}\"",
    "nosuchcommand-here; echo \"status $?\"",
])
async def test_the_node_runs_a_command_as_sh_dash_c_runs_it(tmp_path: Path, command: str) -> None:
    model, mounts = booted(tmp_path, RHCOS_NODE)
    on_node = await run_on_node(model, mounts, command)
    here = await asyncio.to_thread(subprocess.run, ["/bin/sh", "-c", command], capture_output=True, cwd=tmp_path)
    assert (on_node.code, on_node.stdout) == (here.returncode, here.stdout)
    # the node's errors differ from sh -c's own only by "eval: " after the line number
    assert on_node.stderr == here.stderr.replace(b": 1: ", b": 1: eval: ")


@needs_root
async def test_a_killed_command_ends_though_a_job_that_left_its_group_holds_its_output(tmp_path: Path) -> None:
    # asyncio's wait() would wait for the job's end too (it holds the output pipe): closing a
    # command awaits the command's own exit, and the job is the node's going down to end.
    model, mounts = booted(tmp_path, RHCOS_NODE)
    running = await start_on_node(model, mounts, "setsid sleep 300 & echo $!; wait")
    assert running.process.stdout is not None
    escaped = int(await running.process.stdout.readline())
    # setsid leaves the group before it runs sleep: wait for both (a loaded CI machine once saw the
    # job still "setsid", running, when the job's own session alone had been waited for)
    asleep = f"{escaped} (sleep) state S pgid {escaped}"
    await wait_until(lambda: process_summary(escaped) == asleep, what="the job asleep in its own session")
    await running.close()
    assert running.process.returncode == -9 and process_summary(escaped) == asleep  # the kill left it running
    assert mounts.end_processes() == [escaped]  # what the node's power-off does
    await wait_until(lambda: mounts.processes() == [], what="the job's end")


@needs_root
async def test_a_command_the_kill_did_not_end_is_named_not_waited_for(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodeshell, "REAP_TIMEOUT", 1.0)
    model, mounts = booted(tmp_path, RHCOS_NODE)
    running = await start_on_node(model, mounts, "sleep 300")
    pid = running.process.pid
    with monkeypatch.context() as patched:
        patched.setattr(nodeshell.os, "killpg", lambda pgid, signal: None)  # a kill that did not take
        with pytest.raises(NodeCommandStuck, match=rf"command {pid} was killed, but had not ended within 1 s: "
                                                   rf"{pid} \((sh|sleep)\) state S pgid {pid}; its process group: {pid} "):
            await running.close()
    await running.close()  # killed for real: it ends
    assert running.process.returncode == -9


def test_a_process_start_time_tells_a_reused_pid_from_the_process_it_was() -> None:
    # what NodeCommand.close checks before it kills a finished command's group: a process found
    # under the pid that started at another time is someone else's (pids wrap at pid_max)
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.05)"])
    started = process_start_time(first.pid)
    assert isinstance(started, int) and started > 0
    assert process_start_time(first.pid) == started  # the same process: the same time
    first.wait()
    assert process_start_time(first.pid) is None  # reaped: no process under its pid (until reused)
    mine = process_start_time(os.getpid())
    assert mine is not None and mine <= started  # a process started earlier has an earlier time
