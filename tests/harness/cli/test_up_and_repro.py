"""``proxyfleet up`` and ``proxyfleet repro``: bad inputs end with one clear error line and exit
status 2 before anything starts; good inputs bring up a usable lab or reproduce a customer's proxy
(with their credentials never printed), and Ctrl-C leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trustme
from kubernetes import client, config

PROXY = """apiVersion: config.openshift.io/v1
kind: Proxy
metadata:
  name: cluster
spec:
  httpProxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080
  httpsProxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080
  noProxy: .acme.example,registry.corp.internal
  readinessEndpoints:
  - https://www.acme.example
  trustedCA:
    name: user-ca-bundle
"""


def proxyfleet(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proxyfleet.harness", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def mitmdumps(parent: int | None = None) -> set[int]:
    """mitmdump processes (children of ``parent`` only, if given: xdist runs other labs alongside)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"mitmdump" not in (entry / "cmdline").read_bytes():
                    continue
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent is None or ppid == parent:
                found.add(int(entry.name))
    return found


BAD_INPUTS = {
    "missing proxy file": (["repro", "--proxy", "nope.yaml"], "Error: --proxy nope.yaml: no such file"),
    "invalid YAML": (["repro", "--proxy", "broken.yaml"], "Error: --proxy broken.yaml is not valid YAML (line"),
    "invalid proxy URL": (["repro", "--proxy", "ftp.yaml"],
                          "Error: --proxy ftp.yaml: invalid Proxy spec: httpProxy requires a 'http' URI scheme"),
    "unknown field": (["repro", "--proxy", "unknown.yaml"], 'Error: --proxy unknown.yaml: unknown field "spec.httpProxi"'),
    "bundle without a certificate": (["repro", "--proxy", "ok.yaml", "--ca-bundle", "empty.pem"],
                                     "Error: --ca-bundle empty.pem: holds no certificate"),
    "garbage bundle": (["repro", "--proxy", "ok.yaml", "--ca-bundle", "garbage.pem"],
                       "Error: --ca-bundle garbage.pem: not a valid PEM certificate bundle"),
    "up: missing install-config": (["up", "--state-dir", "lab", "--install-config", "nope.yaml"],
                                   "Error: --install-config nope.yaml: no such file"),
    "up: invalid install-config": (["up", "--state-dir", "lab", "--install-config", "badconfig.yaml"],
                                   'Error: --install-config badconfig.yaml: install-config: unknown field "proxi"'),
    "up: install-config with an invalid proxy": (["up", "--state-dir", "lab", "--install-config", "badproxy.yaml"],
                                                  "Error: --install-config badproxy.yaml: invalid noProxy: a b"),
    "networking of the wrong type": (["up", "--state-dir", "lab", "--install-config", "networking.yaml"],
                                     "Error: --install-config networking.yaml: install-config: networking must be a "
                                     "mapping, not a string"),
    "metadata of the wrong type": (["repro", "--proxy", "ok.yaml", "--install-config", "metadata.yaml"],
                                   "Error: --install-config metadata.yaml: install-config: metadata must be a mapping"),
    "a bundle that is a number": (["up", "--state-dir", "lab", "--install-config", "bundle5.yaml"],
                                  "Error: --install-config bundle5.yaml: install-config: additionalTrustBundle must "
                                  "be a string, not a number"),
    "a proxy that is a URL string": (["up", "--state-dir", "lab", "--install-config", "proxystring.yaml"],
                                     "Error: --install-config proxystring.yaml: install-config: proxy must be a "
                                     "mapping, not a string"),
    "recursive anchors": (["up", "--state-dir", "lab", "--install-config", "recursive.yaml"],
                          "Error: --install-config recursive.yaml is not valid YAML (line 1, column 15): YAML aliases "
                          "are not accepted"),
    "an alias bomb in the proxy": (["repro", "--proxy", "bomb.yaml"],
                                   "Error: --proxy bomb.yaml is not valid YAML (line 2, column"),
    "a cluster network entry that is a string": (["up", "--state-dir", "lab", "--install-config", "cidr.yaml"],
                                                 "Error: --install-config cidr.yaml: install-config: "
                                                 "networking.clusterNetwork[0] must be a mapping, not a string"),
}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "broken.yaml").write_text('spec:\n  httpProxy: "http://unterminated\n')
    (tmp_path / "ftp.yaml").write_text("spec:\n  httpProxy: ftp://proxy.acme.example:21\n")
    (tmp_path / "unknown.yaml").write_text("spec:\n  httpProxi: http://proxy.acme.example:8080\n")
    (tmp_path / "ok.yaml").write_text(PROXY)
    (tmp_path / "empty.pem").write_text("# no certificates here\n")
    (tmp_path / "garbage.pem").write_text("-----BEGIN CERTIFICATE-----\n!!notbase64!!\n-----END CERTIFICATE-----\n")
    (tmp_path / "badconfig.yaml").write_text("apiVersion: v1\nproxi: {}\n")
    (tmp_path / "badproxy.yaml").write_text("apiVersion: v1\nproxy:\n  httpProxy: http://p:3128\n  noProxy: a b\n")
    (tmp_path / "networking.yaml").write_text('apiVersion: v1\nnetworking: "x"\n')
    (tmp_path / "metadata.yaml").write_text("apiVersion: v1\nmetadata: lab\n")
    (tmp_path / "bundle5.yaml").write_text("apiVersion: v1\nadditionalTrustBundle: 5\n")
    # the value is the customer's URL, credentials included: the error must not echo it
    (tmp_path / "proxystring.yaml").write_text("apiVersion: v1\nproxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080\n")
    (tmp_path / "recursive.yaml").write_text("proxy: &a {x: *a}\n")
    (tmp_path / "bomb.yaml").write_text("a: &a [S3cr3t, S3cr3t]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n")
    (tmp_path / "cidr.yaml").write_text("apiVersion: v1\nnetworking:\n  clusterNetwork: [10.128.0.0/14]\n")
    return tmp_path


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_clear_line_and_exit_2_with_nothing_started(inputs: Path, case: str) -> None:
    args, message = BAD_INPUTS[case]
    scratch = inputs / "tmp"  # every temporary directory a lab or run would make lands here
    scratch.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", *args], cwd=inputs, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "TMPDIR": str(scratch)})
    out, err = process.communicate(timeout=60)
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert "Traceback" not in result.stderr and "S3cr3t" not in result.stderr
    # Nothing was started: no state directory, no scratch directory, no output but the error.
    assert not (inputs / "lab").exists() and not list(scratch.iterdir()) and not result.stdout


@pytest.mark.slow
def test_repro_runs_the_customer_proxy_and_explains_the_paths(inputs: Path) -> None:
    (inputs / "bundle.pem").write_bytes(trustme.CA(organization_name="ACME Root").cert_pem.bytes())
    (inputs / "install-config.yaml").write_text("apiVersion: v1\nbaseDomain: acme.example\nmetadata:\n  name: prod\n")
    result = proxyfleet("repro", "--proxy", "ok.yaml", "--ca-bundle", "bundle.pem", "--install-config",
                        "install-config.yaml", "--nodes", "2", "--json", "r.json", cwd=inputs)
    assert result.returncode == 0, result.stderr[-4000:]
    output = result.stdout + result.stderr
    assert "S3cr3t" not in output and "S3cr3t" not in (inputs / "r.json").read_text()
    assert "readinessEndpoints dropped" in output
    assert "proxy.acme.example:8080" in output  # the customer's proxy name, mapped onto the lab proxy
    assert "noproxy explain" in output and "dotnet" in output
    assert "https://api-int.prod.acme.example:6443/api" in output  # the customer's cluster domain
    report = json.loads((inputs / "r.json").read_text())
    [scenario] = report["scenarios"]
    assert scenario["workflow"] == "repro" and scenario["status"] == "passed"
    pulls = [c for c in scenario["checks"] if c["check"] == "pull-internet" and c["step"] == "customer proxy applied"]
    assert pulls and all("via http://***:***@proxy.acme.example:8080" in c["expected"] for c in pulls)


@pytest.mark.slow
def test_up_serves_a_lab_until_ctrl_c_and_leaves_nothing_behind(tmp_path: Path) -> None:
    state = tmp_path / "lab"
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "up", "--nodes", "2", "--state-dir", str(state)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stderr is not None and process.stdout is not None
        deadline = time.monotonic() + 120
        for line in process.stderr:
            if "lab ready" in line or time.monotonic() > deadline:
                break
        assert process.poll() is None, "proxyfleet up exited early"
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
            capture_output=True, text=True, timeout=60, check=False)
        assert direct.returncode != 0 and "200" not in direct.stdout, direct.stdout + direct.stderr
        refused = [json.loads(line) for line in (state / "firewall-violations.jsonl").read_text().splitlines()]
        assert any(v["source"] == first["address"] and v["origin"] == "internet-registry" for v in refused)
        children = mitmdumps(parent=process.pid)
        assert len(children) == 2, "the lab runs the real mitmdump (two proxies)"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-3000:]
    for expected in ("kubeconfig:", "proxy:", "proxy CA:", "ssh:", "mitmweb --rfile", "origins:", "quay.io",
                     "firewall:    on", "firewall-violations.jsonl"):
        assert expected in out
    assert "o'brien" not in out  # the second proxy's credentials stay in a 0600 file
    assert not (children & mitmdumps()), "mitmdump left running"
    assert all(not _alive(pid) for pid in children)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
