"""A real /bin/sh on a simulated Linux node: it sees the node's files as / (the host's programs
still run), every write lands in the node's tree, and nothing reaches the host's files."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import certifi
import pytest

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.linux import nodemounts
from proxyfleet.simulators.linux.nodemounts import (
    NodeMountError,
    NodeMounts,
    _await_exits,
    command_file,
    host_cannot_mount,
    host_storage_mounts,
    process_summary,
)
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE, Flavour, create_root
from proxyfleet.simulators.linux.servicemanager import ServiceManager
from tests.simulators.linux.namespaces import mounted

CANNOT_MOUNT = host_cannot_mount()
needs_mounts = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}")
SYSTEM_CAS = Path(certifi.where()).read_bytes()


def on_node(mounts: NodeMounts, command: str) -> subprocess.CompletedProcess[str]:
    held = command_file(command)
    try:
        return subprocess.run(mounts.argv(held), capture_output=True, text=True, timeout=60, pass_fds=(held,))
    finally:
        os.close(held)


def node(tmp_path: Path, flavour: Flavour = RHCOS_NODE) -> NodeMounts:
    root = tmp_path / "node"
    create_root(root, flavour, SYSTEM_CAS, "worker-a")
    mounts = NodeMounts(root)
    mounts.prepare()
    mounted(mounts)
    return mounts


@needs_mounts
def test_the_shell_sees_the_nodes_files_and_the_hosts_programs(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    seen = on_node(mounts, "grep '^ID=' /etc/os-release; cat /etc/hostname; hostname; uname -n; pwd; "
                           "ls /usr/lib/systemd/system; id -un; ls /etc/pki/ca-trust/source/anchors | wc -l")
    assert seen.returncode == 0, seen.stderr
    # its os-release, its hostname (the file and its UTS name), /root, only its own units (the
    # host's are hidden), root by name (the host's passwd shows through), an empty anchors directory
    assert seen.stdout.split("\n") == ['ID="rhcos"', "worker-a", "worker-a", "worker-a", "/root",
                                       "coreos-update-ca-trust.service", "crio.service", "kubelet.service", "root",
                                       "0", ""]


RECONCILE = """set -e
cat > /etc/mco/proxy.env <<'EOF'
HTTP_PROXY=http://proxy.corp.internal:3128
EOF
install -D -m 0644 /dev/stdin /etc/systemd/system/kubelet.service.d/10-mco-default-env.conf <<'EOF'
[Service]
EnvironmentFile=/etc/mco/proxy.env
EOF
echo anchor > /usr/share/pki/ca-trust-source/proxyfleet-probe
echo note > /var/log/proxyfleet-probe
"""


@needs_mounts
def test_a_reconcilers_writes_land_in_the_nodes_tree_and_not_the_hosts(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    done = on_node(mounts, RECONCILE)
    assert done.returncode == 0, done.stderr
    root = mounts.root
    assert (root / "etc/mco/proxy.env").read_text() == "HTTP_PROXY=http://proxy.corp.internal:3128\n"
    assert (root / "var/log/proxyfleet-probe").read_text() == "note\n"
    for host in ("/etc/mco", "/etc/systemd/system/kubelet.service.d/10-mco-default-env.conf",
                 "/usr/share/pki/ca-trust-source/proxyfleet-probe", "/var/log/proxyfleet-probe"):
        assert not Path(host).exists(), host
    # what the shell wrote is what the node's systemd reads at its next boot
    systemd = ServiceManager(root)
    systemd.boot(RHCOS_NODE.enabled)
    assert systemd.running["kubelet.service"].environment["HTTP_PROXY"] == "http://proxy.corp.internal:3128"


@needs_mounts
def test_a_debian_nodes_bundle_is_its_own_not_the_hosts(tmp_path: Path) -> None:
    mounts = node(tmp_path, DEBIAN_NODE)
    seen = on_node(mounts, "cat /etc/ssl/certs/ca-certificates.crt")
    assert seen.returncode == 0, seen.stderr
    ours = [c.thumbprint for c in certificates_in_bundle(SYSTEM_CAS)]
    assert [c.thumbprint for c in certificates_in_bundle(seen.stdout.encode())] == ours


@needs_mounts
def test_a_failing_command_says_so_with_its_own_exit_status(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    failed = on_node(mounts, "cat /etc/mco/no-such.env")
    assert failed.returncode == 1 and "No such file or directory" in failed.stderr
    quoted = on_node(mounts, "printf '%s\\n' \"it's   spaced\" 'a \"b\"'")
    assert quoted.stdout == "it's   spaced\na \"b\"\n"


def test_a_host_that_cannot_run_linux_nodes_is_told_why(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0 and CANNOT_MOUNT is None:
        assert host_cannot_mount() is None
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert host_cannot_mount() == "the lab's Linux nodes need root (mount namespaces and overlayfs)"


@needs_mounts
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_program_on_the_node_reaches_no_network_not_even_the_hosts_loopback(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        tried = on_node(mounts, f"curl -sS --max-time 20 http://127.0.0.1:{port}/")
    assert tried.returncode == 7 and "Failed to connect" in tried.stderr, tried.stderr


def test_descriptors_handed_to_the_node_are_numbered_above_what_dash_can_name(tmp_path: Path) -> None:
    # moving 9 to 9 and then closing 9 would cut the channel off: only fds from 10 are taken
    mounts = NodeMounts(tmp_path / "node")
    with pytest.raises(ValueError, match="descriptor 9 handed to a node's shell must be numbered from 10"):
        mounts.argv(12, 9)
    with pytest.raises(NodeMountError, match="is not up"):
        mounts.argv(12)


@needs_mounts
def test_a_commands_text_is_on_no_command_line(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    held = command_file("echo it's 'quoted'\n")
    try:
        assert held >= 10 and os.read(held, 100) == b"echo it's 'quoted'\n"
        assert "quoted" not in " ".join(mounts.argv(held))
    finally:
        os.close(held)


@needs_mounts
def test_the_hosts_own_files_are_read_only_on_the_node(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    probes = [Path(d) / f"proxyfleet-escape-{os.getpid()}" for d in ("/opt", "/home", "/srv", "/dev/shm")]
    tried = on_node(mounts, "; ".join(f"touch {p} 2>&1 | sed 's/^/refused: /'" for p in probes)
                    + "; echo ok > /tmp/still-writable && echo hi > /dev/null && echo out > /dev/stdout")
    escaped = [p for p in probes if p.exists()]
    for path in escaped:
        path.unlink()
    assert escaped == [] and tried.stdout.count("Read-only file system") == len(probes), tried.stdout
    assert tried.stdout.endswith("out\n") and (mounts.root / "tmp/still-writable").read_text() == "ok\n"
    kernel = on_node(mounts, "echo 1 > /run/proxyfleet/proc/sys/vm/drop_caches")  # the host's procfs: read-only
    assert kernel.returncode != 0 and "Read-only file system" in kernel.stderr


def test_the_hosts_storage_mounts_are_found_and_the_nodes_left_alone() -> None:
    mountinfo = (
        "22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "23 22 0:5 / /dev rw,nosuid - devtmpfs udev rw\n"
        "24 23 0:6 / /dev/shm rw - tmpfs tmpfs rw\n"
        "25 22 0:7 / /proc rw - proc proc rw\n"
        "26 22 0:8 / /sys rw - sysfs sysfs rw\n"
        "27 22 0:9 / /tmp rw - tmpfs tmpfs rw\n"
        "28 22 0:10 / /var/lib/docker rw - ext4 /dev/vdb rw\n"
        "29 22 0:11 / /mnt/with\\040space rw - ext4 /dev/vdc rw\n"
        "30 22 0:12 / /boot ro - ext4 /dev/vdd ro\n")
    assert host_storage_mounts(mountinfo) == ["/", "/dev", "/dev/shm", "/mnt/with space"]


@needs_mounts
def test_a_host_mount_that_cannot_be_made_read_only_is_named_not_fatal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from proxyfleet.simulators.linux import nodemounts

    found = nodemounts.host_storage_mounts
    monkeypatch.setattr(nodemounts, "host_storage_mounts", lambda text: [*found(text), "/no/such mount"])
    mounts = node(tmp_path)
    assert "the host's /no/such mount stay writable to the node's commands" in caplog.text
    assert on_node(mounts, "echo up").stdout == "up\n"


@needs_mounts
def test_a_node_that_cannot_be_mounted_says_why(tmp_path: Path) -> None:
    mounts = NodeMounts(tmp_path / "never-prepared")
    with pytest.raises(NodeMountError, match=r"cannot lay the node's tree at .* over the host's: .+"):
        mounts.mount()
    assert not mounts.mounted


@needs_mounts
def test_unmounting_ends_the_namespace_and_its_holder(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    holder = mounts.holder_pid
    mounts.unmount()
    assert not mounts.mounted and not Path(f"/proc/{holder}").exists()
    with pytest.raises(NodeMountError, match="is not up"):
        _ = mounts.view
    with pytest.raises(NodeMountError, match="is not up"):
        _ = mounts.holder_pid
    mounts.unmount()  # idempotent


@needs_mounts
def test_ending_the_nodes_processes_ends_each_on_the_node_and_nothing_else(tmp_path: Path) -> None:
    mounts = node(tmp_path)
    holder = mounts.holder_pid
    # a job in a session of its own (out of any command's process group), and one of the host's
    started = on_node(mounts, "setsid sh -c 'echo $$ > /tmp/left; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                              "until [ -s /tmp/left ]; do sleep 0.01; done; cat /tmp/left")
    on_the_node = int(started.stdout)
    on_the_host = subprocess.Popen(["sleep", "300"])
    try:
        assert mounts.processes() == [on_the_node]
        assert re.fullmatch(rf"{on_the_node} \((sh|sleep)\) state [RS] pgid {on_the_node}", process_summary(on_the_node))
        assert mounts.end_processes() == [on_the_node]
        on_the_host_ran = on_the_host.poll() is None
    finally:
        on_the_host.kill()
        on_the_host.wait()
    assert on_the_host_ran and mounts.mounted and mounts.holder_pid == holder
    assert mounts.processes() == []  # (ended, not only signalled: a killed process leaves its namespaces as it exits)
    assert process_summary(on_the_host.pid) == f"{on_the_host.pid} ended"
    mounts.unmount()
    assert mounts.processes() == [] and mounts.end_processes() == []


def test_waiting_for_exits_returns_once_each_has_ended_or_at_the_bound() -> None:
    running, killed = subprocess.Popen(["sleep", "300"]), subprocess.Popen(["sleep", "300"])
    handles = [os.pidfd_open(running.pid), os.pidfd_open(killed.pid)]
    try:
        killed.kill()
        _await_exits(handles[1:], 300.0)  # returns at the exit, not at the bound
        assert process_summary(killed.pid).startswith(f"{killed.pid} (sleep) state Z ")  # exited, not yet reaped
        _await_exits(handles, 0.05)  # one never ends: the bound ends the wait, the process runs on
        assert running.poll() is None
    finally:
        for handle in handles:
            os.close(handle)
        for process in (running, killed):
            process.kill()
            process.wait()


@needs_mounts
def test_a_pid_found_on_the_node_that_is_another_process_by_the_kill_is_not_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Between the look at /proc and the kill, a process ended and its pid went to another, off the
    # node: that one is neither signalled nor waited for (it would hold the node's power-off up).
    mounts = node(tmp_path)
    started = on_node(mounts, "setsid sh -c 'echo $$ > /tmp/left; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                              "until [ -s /tmp/left ]; do sleep 0.01; done; cat /tmp/left")
    on_the_node, elsewhere = int(started.stdout), subprocess.Popen(["sleep", "300"])
    waited: list[int] = []
    try:
        monkeypatch.setattr(nodemounts, "processes_in_namespace", lambda namespace, exclude: [on_the_node, elsewhere.pid])
        monkeypatch.setattr(nodemounts, "_await_exits", lambda handles, timeout: waited.extend(handles))
        assert mounts.end_processes() == [on_the_node]
        assert len(waited) == 1 and elsewhere.poll() is None  # the one killed, and only it
    finally:
        elsewhere.kill()
        elsewhere.wait()
        mounts.unmount()
