"""``proxyfleet up`` serves a usable lab (real mitmdump, egress firewall on) until Ctrl-C, and
leaves nothing running."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client, config

from proxyfleet.core.lifecycle import process_alive as alive
from tests.harness.cli.commands import mitmdumps, proxyfleet, wait_for_line
from tests.support import HANG


@pytest.mark.slow
def test_up_serves_a_lab_until_ctrl_c_and_leaves_nothing_behind(tmp_path: Path) -> None:
    state = tmp_path / "lab"
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "up", "--nodes", "2", "--state-dir", str(state)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stderr is not None and process.stdout is not None
        said = wait_for_line(process, "lab ready", HANG)
        assert process.poll() is None, f"proxyfleet up exited early: {said}"
        kubeconfig = state / "cluster" / "kubeconfig"
        api = config.new_client_from_config(config_file=str(kubeconfig))
        names = sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items)
        assert names == ["win-0001", "win-0002"]
        instances = client.CoreV1Api(api).read_namespaced_config_map(
            "windows-instances", "openshift-windows-machine-config-operator")
        assert len(instances.data) == 2
        api.close()
        assert (state / "proxy-ca.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")
        # The egress firewall is on by default: a node going straight to the internet is refused
        # (no proxy configured yet), and the refusal is recorded where the banner says.
        manifest = json.loads((state / "fleet" / "fleet.json").read_text())
        first = manifest["nodes"][0]
        direct = subprocess.run(
            ["ssh", "-i", manifest["private_key"], "-p", str(first["port"]), "-o",
             f"UserKnownHostsFile={state / 'fleet' / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
             "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", f"{first['username']}@{first['address']}",
             'curl.exe -s -o NUL -w "%{http_code}" --noproxy "*" https://quay.io/v2/'],
            capture_output=True, text=True, timeout=HANG, check=False)
        assert direct.returncode != 0 and "200" not in direct.stdout, direct.stdout + direct.stderr
        refused = [json.loads(line) for line in (state / "firewall-violations.jsonl").read_text().splitlines()]
        assert any(v["source"] == first["address"] and v["origin"] == "internet-registry" for v in refused)
        children = mitmdumps(parent=process.pid)
        assert len(children) == 2, "the lab runs the real mitmdump (two proxies)"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=HANG)
    assert process.returncode == 0, err[-3000:]
    for expected in ("kubeconfig:", "proxy:", "proxy CA:", "ssh:", "mitmweb --rfile", "origins:", "quay.io",
                     "firewall:    on", "firewall-violations.jsonl"):
        assert expected in out
    assert "o'brien" not in out  # the second proxy's credentials stay in a 0600 file
    assert not (children & mitmdumps()), "mitmdump left running"
    assert all(not alive(pid) for pid in children)



def test_a_lab_that_cannot_start_is_one_error_line_without_a_traceback(tmp_path: Path) -> None:
    result = proxyfleet("up", "--nodes", "1", "--reconciler", "none", "--state-dir", str(tmp_path / "lab"),
                        "--proxy-command", "sh -c 'echo FATAL: no such directive >&2; exit 3'", cwd=tmp_path,
                        timeout=HANG)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.startswith("Error: the proxy exited during start-up; its output:\nFATAL: no such directive")
    assert "Traceback" not in result.stderr


def test_a_state_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = proxyfleet("up", "--nodes", "1", "--state-dir", str(shared), cwd=tmp_path, timeout=HANG)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"Error: --state-dir {shared} is owned by {_me()}, mode 0777: "
                                                  f"others can write it, and keys and logs go there; run chmod go-w "
                                                  f"{shared} or give another directory"]
    assert list(shared.iterdir()) == []


def _me() -> str:
    return f"{pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()})"
