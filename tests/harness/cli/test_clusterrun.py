"""``proxyfleet conformance --kubeconfig``: the embedded lab plays an existing cluster from outside.
Three processes, as on a real cluster: ``proxyfleet up --reconciler none`` (the cluster and its
Windows hosts), ``proxyfleet reconcile`` against its kubeconfig (the operator under test) and
``proxyfleet conformance --kubeconfig … --ssh-key …``, which has no Python access to the lab."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import click
import pytest
import trustme
from kubernetes import client, config
from rich.console import Console

from proxyfleet.core.contract import PROXY, RUN_CA
from proxyfleet.harness.cli.clusterrun import (
    _with_credentials,
    check_workflows,
    cluster_restored,
    plan,
    restore_command,
    target_from,
    write_target,
)
from proxyfleet.harness.conformance.clustertarget import ClusterTarget
from proxyfleet.harness.conformance.results import expand_checks
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.origins.catalog import real_ports_allowed
from tests.apifront import ApiFront, api_front
from tests.harness.cli.outside import outside_lab
from tests.harness.cli.test_conformance import ROLLOUT_ACTIONS
from tests.support import HANG

NAMESPACE = "openshift-windows-machine-config-operator"


# --- the options, checked before anything starts --------------------------------------------------

def _values(**given: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"kubeconfig": None, "ssh_key": None, "ssh_port": 22, "ssh_known_hosts": None,
                              "instances": (), "linux_instances": (), "internet_image": None, "intranet_image": None, "http_url": None,
                              "no_proxy": "", "second_proxy_url": None, "dry_run": False, "proxy_hosts": None,
                              "proxy_egress": None, "proxy_upstream_ca": None}
    values.update(given)
    return values


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    key = tmp_path / "id_ed25519"
    key.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
                          "contexts: [{name: prod, context: {cluster: c, user: u}}]\n")
    ca = tmp_path / "ca.pem"
    ca.write_bytes(trustme.CA().cert_pem.bytes())
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    auth = tmp_path / "auth"
    auth.write_text("svc proxy:p@ss:w0rd/$(x)'\n")
    return {"key": key, "kubeconfig": kubeconfig, "ca": ca, "bad": bad, "auth": auth}


def test_cluster_options_without_kubeconfig_are_refused_by_name(files: dict[str, Path]) -> None:
    with pytest.raises(click.UsageError, match="--internet-image, --ssh-key: only with --kubeconfig"):
        target_from(_values(ssh_key=files["key"], internet_image="quay.io/x:1"), ProxyOptions())
    with pytest.raises(click.UsageError, match="--linux-instance: only with --kubeconfig"):
        target_from(_values(linux_instances=("10.0.6.10=core",)), ProxyOptions())
    assert target_from(_values(), ProxyOptions()) is None  # a lab run


@pytest.mark.parametrize(("given", "proxy", "message"), [
    ({}, {"url": "http://proxy.example:3128"}, "--kubeconfig needs --ssh-key"),
    ({"ssh_key": "key"}, {}, "--kubeconfig needs --proxy-url .* or --proxy-listen"),
    ({"ssh_key": "key"}, {"url": "http://p:3128", "command": "squid"}, "needs --proxy-listen ADDR:PORT"),
    ({"ssh_key": "key"}, {"url": "http://p:3128", "user": "proxy"}, "only for a vendor's proxy the run starts"),
    ({"ssh_key": "key"}, {"url": "http://p:3128", "log_format": "combined"}, "only for a vendor's proxy the run"),
    ({"ssh_key": "key"}, {"url": "http://p:3128", "unbound_egress": True}, "--proxy-unbound-egress: the lab's"),
    ({"ssh_key": "key"}, {"listen": "10.0.0.9:3128", "tls_port": 3129}, "TLS to the proxy is not supported"),
    ({"ssh_key": "key"}, {"listen": "10.0.0.9"}, "is not ADDRESS:PORT"),
    ({"ssh_key": "key"}, {"listen": "10.0.0.9:3128", "ca_file": "ca"}, "intercepts with a CA the run makes"),
    ({"ssh_key": "key", "proxy_egress": "10.0.0.9"}, {"url": "http://p:3128"}, "--proxy-egress: only for the run's own"),
    ({"ssh_key": "key"}, {"url": "http://user:secret@p:3128"}, "--proxy-auth-file, not in the URL"),
    ({"ssh_key": "key"}, {"url": "ftp://p:21"}, "expected http://HOST:PORT"),
    ({"ssh_key": "key"}, {"url": "http://p"}, "expected http://HOST:PORT"),
    ({"ssh_key": "key"}, {"url": "http://p:3128", "ca_file": "bad"}, "--proxy-ca .*bad.pem"),
    ({"ssh_key": "key", "instances": ("10.0.0.5",)}, {"url": "http://p:3128"}, "expected ADDRESS=USER"),
    ({"ssh_key": "key", "linux_instances": ("10.0.6.10",)}, {"url": "http://p:3128"}, "--linux-instance .*=core"),
    ({"ssh_key": "key", "instances": ("10.0.0.5=admin",), "linux_instances": ("10.0.0.5=core",)},
     {"url": "http://p:3128"}, "10.0.0.5: given as both --instance and --linux-instance"),
    ({"ssh_key": "kubeconfig"}, {"url": "http://p:3128"}, "cannot read a private key"),
    ({"ssh_key": "key", "internet_image": "Quay.io/UPPER:x"}, {"url": "http://p:3128"},
     "--internet-image 'Quay.io/UPPER:x': parse reference .*invalid reference format"),
    ({"ssh_key": "key", "intranet_image": "registry.corp/app:1 2"}, {"url": "http://p:3128"}, "--intranet-image"),
    ({"ssh_key": "key", "http_url": "ctldl.windowsupdate.com"}, {"url": "http://p:3128"},
     "--http-url 'ctldl.windowsupdate.com': expected an http://"),
    ({"ssh_key": "key", "http_url": "http://user:secret@site.example/"}, {"url": "http://p:3128"},
     "--http-url: a URL with credentials would be on curl.exe's command line"),
])
def test_bad_cluster_options_get_a_specific_error(files: dict[str, Path], given: dict[str, Any],
                                                  proxy: dict[str, Any], message: str) -> None:
    given = {k: files[v] if k == "ssh_key" else v for k, v in given.items()}
    proxy = {k: files[v] if k == "ca_file" else v for k, v in proxy.items()}
    with pytest.raises(click.UsageError, match=message) as caught:
        target_from(_values(kubeconfig=files["kubeconfig"], **given), ProxyOptions(**proxy))
    assert "secret" not in str(caught.value)


def test_credentials_come_from_the_file_percent_encoded_and_stay_out_of_the_plan(files: dict[str, Path]) -> None:
    found = target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"],
                                instances=("10.0.0.5=Administrator", "10.0.0.6=admin"),
                                intranet_image="registry.corp.example/agent:1"),
                        ProxyOptions(url="http://proxy.corp.example:3128", auth_file=files["auth"],
                                     ca_file=files["ca"]))
    assert found is not None and found[1] is None  # a proxy already running: the run starts none
    target = found[0]
    parts = urllib.parse.urlsplit(target.proxy_url)
    assert (urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")) == \
        ("svc proxy", "p@ss:w0rd/$(x)'")
    assert target.instances == {"10.0.0.5": "Administrator", "10.0.0.6": "admin"}
    assert len(target.proxy_ca_pems) == 1
    text = "\n".join(plan(target, ("remove",)))
    assert "w0rd" not in text and "svc" not in text
    assert "pull-internet:skipped(nodestinationgiven)" in text.replace(" ", "")
    assert "registry.corp.example/agent:1" in text
    assert "workflows:    remove" in text
    assert "drift:" not in text and "cordoned:" not in text  # neither workflow chosen
    assert _with_credentials("https://p.example:443/", None, "--proxy-url") == "https://p.example:443"


def test_the_runs_own_proxy_is_published_at_its_listen_address_unless_named(files: dict[str, Path]) -> None:
    found = target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"], proxy_egress="10.0.0.9",
                                proxy_hosts=files["ca"]), ProxyOptions(listen="10.0.0.9:3130"))
    assert found is not None and found[1] is not None
    target, spec = found
    assert target.proxy_url == "http://10.0.0.9:3130" and spec.egress_address == "10.0.0.9"
    assert "the run's own mitmdump on 10.0.0.9:3130" in "\n".join(plan(target, (), spec))
    named = target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"]),
                        ProxyOptions(listen="10.0.0.9:3130", url="http://proxy.corp.example:3128"))
    assert named is not None and named[0].proxy_url == "http://proxy.corp.example:3128"
    # a vendor's, started by the run: its interception CA goes with it (published by the run)
    vendor = target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"]),
                         ProxyOptions(listen="10.0.0.9:3130", command="squid -N -n {instance} -f {config_dir}/squid.conf",
                                      ca_file=files["ca"], user="proxy", log_format="combined"))
    assert vendor is not None and vendor[1] is not None
    # its access log is read in the format asked for, by the proxy and by the run's evidence
    assert vendor[1].log_format == "combined" and vendor[0].proxy_log_format == "combined"
    assert vendor[1].vendor and vendor[1].vendor_ca_pem == files["ca"].read_bytes() and vendor[0].proxy_ca_pems == []
    assert "a vendor's proxy (command) on 10.0.0.9:3130" in "\n".join(plan(vendor[0], (), vendor[1]))


def test_the_scenarios_share_the_runs_baselines_and_host_key_pins(tmp_path: Path) -> None:
    target = ClusterTarget(kubeconfig=tmp_path / "kubeconfig", ssh_key_path=tmp_path / "key", proxy_url="http://p:3128",
                           context="prod")
    written = write_target(target, tmp_path)
    again = ClusterTarget.from_json(json.loads(written.read_text()))
    assert (again.baseline_file, again.host_keys_file) == (tmp_path / "baselines.json", tmp_path / "host-keys.json")
    assert again.context == "prod"  # the scenarios use the context the run checked
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_the_run_pins_the_context_it_checked(files: dict[str, Path]) -> None:
    """--target-cluster is checked through the kubeconfig's current context, and the run keeps using
    that context: `kubectl config use-context` on the same file mid-run does not move it."""
    found = target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"]),
                        ProxyOptions(url="http://proxy.corp.internal:3128"))
    assert found is not None
    target, _ = found
    assert target.context == "prod" and "context prod" in target.describe()[0]
    assert restore_command(target, Path("/s.json")).endswith("--context prod --snapshot /s.json")
    files["kubeconfig"].write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    with pytest.raises(click.UsageError, match="has no current context"):
        target_from(_values(kubeconfig=files["kubeconfig"], ssh_key=files["key"]),
                    ProxyOptions(url="http://proxy.corp.internal:3128"))


def test_lab_only_workflows_are_refused_against_a_cluster() -> None:
    check_workflows(("runtime-add", "change", "remove", "drift"))
    with pytest.raises(click.UsageError, match="--workflow faults, install-time: needs the embedded lab"):
        check_workflows(("faults", "remove", "install-time"))


# --- the put-back: kept until it is complete ---------------------------------------------------------

@contextlib.contextmanager
def _cluster_in_a_thread(tmp_path: Path) -> Iterator[tuple[ControlPlane, ApiFront, asyncio.AbstractEventLoop]]:
    """An embedded control plane with a refusing gateway in front of it, served by an event loop of
    its own, so the command's code (which runs its own loops in the main thread) can be called."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    plane = ControlPlane(ControlPlaneSettings(tmp_path / "cluster", trustme.CA().cert_pem.bytes().decode()))
    front_context = api_front(plane)
    try:
        asyncio.run_coroutine_threadsafe(plane.start(), loop).result(60)
        front = asyncio.run_coroutine_threadsafe(front_context.__aenter__(), loop).result(60)
        yield plane, front, loop
    finally:
        asyncio.run_coroutine_threadsafe(front_context.__aexit__(None, None, None), loop).result(60)
        asyncio.run_coroutine_threadsafe(plane.stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def test_a_put_back_the_cluster_refuses_keeps_the_snapshot_for_restore(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with _cluster_in_a_thread(tmp_path) as (plane, front, _loop):
        api = config.new_client_from_config(config_file=str(plane.kubeconfig_path))
        original = {"httpProxy": "http://proxy.acme.example:8080", "noProxy": ".acme.example"}
        client.CustomObjectsApi(api).patch_cluster_custom_object(*PROXY, {"spec": original})
        # The gateway refuses exactly the put-back of the original Proxy (a webhook, an RBAC change …).
        front.refuse("PUT", "/proxies/cluster", 422, message="denied by policy")
        target = ClusterTarget(kubeconfig=front.kubeconfig(plane, tmp_path / "kubeconfig"),
                               ssh_key_path=tmp_path / "key", proxy_url="http://proxy.corp.internal:3128")
        console = Console(file=io.StringIO(), width=400)
        with pytest.raises(click.ClickException, match=r"2 object\(s\) of the cluster could not be put back"), \
                cluster_restored(target, console) as snapshot:
                # the run: its own proxy and CA, then a Ctrl-C
                assert {k: snapshot.proxy_spec.get(k) for k in original} == original
                client.CoreV1Api(api).create_namespaced_config_map(
                    "openshift-config", {"metadata": {"name": RUN_CA}, "data": {"ca-bundle.crt": "x"}})
                client.CustomObjectsApi(api).patch_cluster_custom_object(
                    *PROXY, {"spec": {"httpProxy": "http://proxy.corp.internal:3128", "trustedCA": {"name": RUN_CA}}})
                raise KeyboardInterrupt
        output = console.file.getvalue()  # type: ignore[attr-defined]
        saved = target.snapshot_file
        assert saved is not None and saved.exists() and saved.parent == tmp_path / "state" / "proxyfleet" / "cluster-runs"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600 and stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
        assert "could not put back Proxy/cluster spec: 422 Invalid: denied by policy" in output
        assert f"could not put back ConfigMap openshift-config/{RUN_CA}: left in place" in output
        assert f"proxyfleet restore --kubeconfig {target.kubeconfig} --snapshot {saved}" in output.replace("\n", "")
        # the cause fixed (here: the same cluster reached directly), the kept file finishes the job
        restored = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "restore", "--kubeconfig",
                                   str(plane.kubeconfig_path), "--snapshot", str(saved)],
                                  capture_output=True, text=True, timeout=HANG)
        assert restored.returncode == 0, restored.stderr
        assert "Proxy/cluster spec restored" in restored.stdout and f"{RUN_CA} deleted" in restored.stdout
        spec = client.CustomObjectsApi(api).get_cluster_custom_object(*PROXY)["spec"]
        assert {k: spec.get(k) for k in original} == original and not spec["trustedCA"]["name"]
        api.close()


def test_a_complete_put_back_deletes_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with _cluster_in_a_thread(tmp_path) as (plane, _, _loop):
        target = ClusterTarget(kubeconfig=plane.kubeconfig_path, ssh_key_path=tmp_path / "key",
                               proxy_url="http://proxy.corp.internal:3128")
        console = Console(file=io.StringIO(), width=400)
        with cluster_restored(target, console):
            assert target.snapshot_file is not None and target.snapshot_file.exists()
        assert not target.snapshot_file.exists()
        assert "put the cluster back: nothing had changed" in console.file.getvalue()  # type: ignore[attr-defined]


# --- the lab as an existing cluster ------------------------------------------------------------------

def _proxy_and_configmaps(api: client.ApiClient) -> tuple[dict[str, Any], set[str], dict[str, str], dict[str, bool]]:
    """What a run changes: the Proxy's spec, openshift-config's ConfigMaps, windows-instances, cordons."""
    proxy = client.CustomObjectsApi(api).get_cluster_custom_object("config.openshift.io", "v1", "proxies", "cluster")
    core = client.CoreV1Api(api)
    names = {c.metadata.name for c in core.list_namespaced_config_map("openshift-config").items}
    instances = core.read_namespaced_config_map("windows-instances", NAMESPACE).data
    cordons = {n.metadata.name: bool(n.spec.unschedulable) for n in core.list_node().items}
    return dict(proxy.get("spec") or {}), names, dict(instances), cordons


def _put_back(api: client.ApiClient, before: tuple[dict[str, Any], set[str], dict[str, str], dict[str, bool]],
              within: float = 180.0) -> None:
    """The run's objects are as they were the moment it ends. Node cordons are too once the
    operator has acted on the restored Proxy: putting back a Proxy the last scenario left set makes
    it roll its removal out, cordoning each node it reboots (seen in CI: the check, made at once,
    found its cordon). A cordon of the run's own is never lifted by the operator, so it still fails."""
    assert _proxy_and_configmaps(api)[:3] == before[:3]
    deadline = time.monotonic() + within
    while (cordons := _proxy_and_configmaps(api)[3]) != before[3]:
        assert time.monotonic() < deadline, f"Node cordons {cordons} {within} s after the run; before it {before[3]}"
        time.sleep(0.2)


@pytest.mark.slow
def test_every_cluster_workflow_passes_from_outside_and_the_cluster_is_put_back(tmp_path: Path) -> None:
    with outside_lab(tmp_path) as lab:
        api = lab.api()
        before = _proxy_and_configmaps(api)
        name = lab.cluster_name()
        dry = subprocess.run(lab.conformance_args("--dry-run", named=False), capture_output=True, text=True,
                             timeout=HANG)
        assert dry.returncode == 0, dry.stderr[-3000:]
        assert "saved first:" in dry.stdout and _proxy_and_configmaps(api) == before  # touched nothing
        assert f"cluster:      {name} (Infrastructure/cluster status.infrastructureName)" in dry.stdout
        # never by accident: without the cluster's name, or with another, one error line and nothing touched
        for given, said in (([], f"--target-cluster {name} (nothing was touched)"),
                            (["--target-cluster", "prod-eu-1"], f"reaches the cluster {name} "
                                                                "(Infrastructure/cluster status.infrastructureName), "
                                                                "not prod-eu-1")):
            refused = subprocess.run([*lab.conformance_args(named=False), *given], capture_output=True, text=True,
                                     timeout=HANG)
            errors = [line for line in refused.stderr.splitlines() if line.startswith("Error:")]
            assert refused.returncode == 1 and len(errors) == 1 and said in errors[0], refused.stderr[-3000:]
            assert "Traceback" not in refused.stderr and "saved the cluster" not in refused.stderr
            assert _proxy_and_configmaps(api) == before
        assert "cordoned:     runtime-add cordons one schedulable Windows instance" in dry.stdout
        assert "drift:        the operator's trusted-ca ConfigMap is deleted" in dry.stdout
        report = tmp_path / "r.json"
        run = subprocess.run(lab.conformance_args("--json", str(report), "--junit", str(tmp_path / "r.xml"),
                                                  "--wait-restored"), capture_output=True, text=True, timeout=3 * HANG)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
        # returned only once the nodes hold the restored settings (the operator here claims revisions)
        assert "the cluster is back: every instance holds the restored revision" in " ".join(run.stderr.split())
        _put_back(api, before)
        api.close()
    data = json.loads(report.read_text())
    assert sorted(s["workflow"] for s in data["scenarios"]) == ["change", "drift", "remove", "runtime-add"]
    # written after the put-back and the wait: what they found is in it
    assert data["exit_code"] == 0 and data["put_back"] == {"waited_s": 900.0, "still_rolling": []}
    statuses: dict[str, set[str]] = {}
    for scenario in data["scenarios"]:
        for check in scenario["checks"]:
            statuses.setdefault(check["check"], set()).add(check["status"])
    # judged from outside: the state on the hosts, the Node, the operator's ConfigMap, the API's objects
    for judged in ("converged", "registry-env", "certificates", "services-restarted", "node-ready", "trusted-ca",
                   "credentials", "files"):
        assert statuses[judged] == {"passed"}, judged
    # what only the lab can show is skipped, with the reason, never passed
    for lab_only in ("service-environment", "firewall", "reboots", "drained-while-down", "drained",
                     "disruption-budget"):
        assert statuses[lab_only] == {"skipped"}, lab_only
    reasons = {c["observed"] for s in data["scenarios"] for c in s["checks"] if c["check"] == "service-environment"}
    assert reasons == {"needs lab evidence: a service's environment is not observable on Windows"}
    # traffic: a success proves no route without the proxy's log; the intranet pull must succeed
    pulls = [c for s in data["scenarios"] for c in s["checks"] if c["check"] == "pull-intranet"]
    assert pulls and all(c["status"] == "skipped" and c["observed"].startswith("pull succeeded") for c in pulls)
    # the administrator's maintenance cordon survived the proxy's rollout, and its end changed nothing
    steps = {c["step"] for s in data["scenarios"] for c in s["checks"] if s["workflow"] == "runtime-add"}
    assert {"an instance cordoned for maintenance", "maintenance over: the instance uncordoned"} <= steps
    kept = [c for s in data["scenarios"] for c in s["checks"]
            if c["check"] == "node-ready" and c["step"] == "proxy added" and "cordoned by the administrator"
            in c["expected"]]
    assert len(kept) == 1 and kept[0]["status"] == "passed"
    junit = (tmp_path / "r.xml").read_text()
    assert '<skipped message="needs lab evidence: a service' in junit
    assert "skipped service-environment: needs lab evidence" in run.stderr.replace("\n", " ")


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "workflow", "caught_by"), [
    ("no-cert-removal", "remove", "certificates"),
    ("semicolon-noproxy", "runtime-add", "registry-env"),
    # the real operator's bug: its reboot ends an administrator's cordon
    ("uncordons-admin-cordon", "runtime-add", "node-ready"),
    ("no-trusted-ca-restore", "drift", "trusted-ca"),
])
def test_a_broken_operator_is_caught_from_outside(tmp_path: Path, variant: str, workflow: str,
                                                  caught_by: str) -> None:
    # A step whose nodes were already off (a claim from an earlier step is stale, not refuted) or
    # where no node is off (a ConfigMap never restored) is judged at its deadline: a shorter one.
    # Only the broken operator's run: it must fail, and a step cut short only adds failed checks —
    # unless the mistake is an action during the rollout (the uncordon after the admin-cordoned
    # node's reboot): cut short on a slow machine, it never happens. That one keeps the default.
    deadline = [] if variant in ROLLOUT_ACTIONS else ["--converge-timeout", "30"]
    with outside_lab(tmp_path, variant) as lab:
        report = tmp_path / "r.json"
        run = subprocess.run(lab.conformance_args("--workflow", workflow, "--json", str(report), *deadline),
                             capture_output=True, text=True, timeout=3 * HANG)
    assert run.returncode == 1, run.stderr[-3000:]
    failed = {c["check"] for s in json.loads(report.read_text())["scenarios"] for c in s["checks"]
              if c["status"] == "failed"}
    assert caught_by in failed, failed


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "caught_by"), [("correct", None),
                                                    ("linux-no-daemon-reload", "units-loaded"),
                                                    # read from the node's own unit files, as systemd does
                                                    ("linux-set-environment", "unit-environment")])
def test_an_existing_clusters_linux_workers_are_judged_beside_its_windows_instances(
        tmp_path: Path, variant: str, caught_by: str | None) -> None:
    # `up --linux-nodes 1`: an RHCOS worker the cluster's own operator configures (the lab's stand-in
    # for the Machine Config Operator), named to the run with --linux-instance and judged by the Linux
    # checks over SSH; the Windows instances beside it as before.
    workflows = ["--workflow", "runtime-add"] + (["--workflow", "remove"] if caught_by is None else [])
    with outside_lab(tmp_path, variant, linux_nodes=1) as lab:
        assert lab.linux and list(lab.linux.values()) == ["core"]
        (worker,) = lab.linux
        dry = subprocess.run(lab.conformance_args("--dry-run", named=False), capture_output=True, text=True,
                             timeout=HANG)
        assert dry.returncode == 0, dry.stderr[-3000:]
        assert f"linux nodes:  core@{worker} (configured by the platform" in dry.stdout
        report = tmp_path / "r.json"
        run = subprocess.run(lab.conformance_args(*workflows, "--json", str(report),
                                                  *(["--converge-timeout", "30"] if caught_by else [])),
                             capture_output=True, text=True, timeout=3 * HANG)
    data = json.loads(report.read_text())
    on_worker: dict[str, set[str]] = {}
    for scenario in data["scenarios"]:
        for check in expand_checks(scenario["checks"]):
            if check.node == worker:
                on_worker.setdefault(check.check, set()).add(check.status)
    if caught_by is None:
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
        assert data["nodes"] == 3
        # the Linux meanings, from the node's own evidence (/proc, systemd, the extracted bundle)
        for judged in ("converged", "service-environment", "units-loaded", "unit-environment", "certificates",
                       "services-restarted", "node-ready", "files"):
            assert on_worker[judged] == {"passed"}, (judged, on_worker)
        assert "registry-env" not in on_worker
    else:
        assert run.returncode == 1, run.stderr[-3000:]
        assert "failed" in on_worker[caught_by], on_worker


@pytest.mark.slow
def test_a_run_stopped_by_sigterm_puts_the_cluster_back(tmp_path: Path) -> None:
    with outside_lab(tmp_path) as lab:
        api = lab.api()
        before = _proxy_and_configmaps(api)
        # runtime-add: the instance is cordoned for maintenance before the proxy's CA is published
        run = subprocess.Popen([*lab.conformance_args("--workflow", "runtime-add"), "--instance",
                                "127.10.0.1=Administrator"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            # wait (with a deadline) until the run has changed the cluster: its CA ConfigMap exists
            deadline = time.monotonic() + 120
            while "proxyfleet-run-ca" not in _proxy_and_configmaps(api)[1]:
                assert run.poll() is None and time.monotonic() < deadline, "the run never changed the cluster"
                time.sleep(0.2)
            changed = _proxy_and_configmaps(api)
            assert changed != before and list(changed[2]) == ["127.10.0.1"]
            assert list(changed[3].values()).count(True) == 1  # the run's maintenance cordon
            run.send_signal(signal.SIGTERM)
            _, err = run.communicate(timeout=HANG)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode != 0
        assert "put the cluster back" in err
        _put_back(api, before)
        api.close()


SQUID = shutil.which("squid") or ("/usr/sbin/squid" if Path("/usr/sbin/squid").exists() else None)
EXAMPLES = Path(__file__).parents[3] / "examples" / "squid"
# `up --proxy-url` puts the lab's origins on their real ports (a proxy resolves them by name)
needs_real_ports = pytest.mark.skipif(not real_ports_allowed(), reason="origins on ports 80/443 need root, or "
                                      "net.ipv4.ip_unprivileged_port_start=0")


def _worker_address() -> str:
    """An address of this xdist worker's own (two workers' run proxies never share one)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return f"127.22.{int(worker.removeprefix('gw') or 0)}.1"


@needs_real_ports
@pytest.mark.slow
@pytest.mark.usefixtures("well_known_block")  # `up --proxy-url` takes the one well-known block
def test_the_runs_own_proxy_attributes_every_flow(tmp_path: Path) -> None:
    with outside_lab(tmp_path, run_proxy=f"{_worker_address()}:3128") as lab:
        report = tmp_path / "r.json"
        run = subprocess.run(lab.conformance_args("--workflow", "runtime-add", "--workflow", "remove", "--json",
                                                  str(report)), capture_output=True, text=True, timeout=3 * HANG)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    checks = [c for s in json.loads(report.read_text())["scenarios"] for c in s["checks"] if c["step"] == "proxy added"]
    observed = {(c["check"], c["observed"]) for c in checks}
    # judged by the run's proxy's own log: through it (intercepted; plain HTTP), or nothing there
    assert ("pull-internet", "through the run's proxy, MITM certificate trusted") in observed
    assert ("fetch-http", "through the run's proxy, plain HTTP") in observed
    assert ("pull-intranet", "direct, succeeded, nothing at the run's proxy (the origin's log is not the run's)") \
        in observed
    assert all(c["status"] == "passed" for c in checks if c["check"] in ("pull-internet", "pull-intranet",
                                                                         "fetch-http", "node-ready"))
    assert any("no kubelet traffic to api-int" in c["expected"] for c in checks if c["check"] == "node-ready")


@needs_real_ports
@pytest.mark.slow
@pytest.mark.usefixtures("well_known_block")
@pytest.mark.parametrize("how", ["process", "image"])
def test_a_vendors_proxy_the_run_starts_is_judged_by_its_access_log(tmp_path: Path, request: pytest.FixtureRequest,
                                                                    how: str) -> None:
    user = ["--proxy-user", "proxy"] if os.geteuid() == 0 else []  # Squid will not run as root
    if how == "image":
        image = ["--proxy-image", request.getfixturevalue("squid_image")]  # skips, saying why, without one
        command = "squid -N -n {instance} -f {config_dir}/squid.conf"
    else:
        if SQUID is None:
            pytest.skip("needs Squid (apt-get install squid-openssl)")
        image, command = [], f"{SQUID} -N -n {{instance}} -f {{config_dir}}/squid.conf"
    vendor = ["--proxy-command", command, "--proxy-config", str(EXAMPLES / "squid.conf"), *user, *image]
    with outside_lab(tmp_path, run_proxy=f"{_worker_address()}:3128") as lab:
        lab.vendor = vendor
        report = tmp_path / "r.json"
        run = subprocess.run(lab.conformance_args("--workflow", "runtime-add", "--json", str(report)),
                             capture_output=True, text=True, timeout=3 * HANG)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    assert f"a vendor's proxy ({'image' if image else 'command'}" in run.stdout + run.stderr
    checks = [c for s in json.loads(report.read_text())["scenarios"] for c in s["checks"] if c["step"] == "proxy added"]
    observed = {(c["check"], c["observed"]) for c in checks}
    # Squid tunnels (no interception CA given): the node must have been carried, and seen the origin
    assert ("pull-internet", "through the run's proxy, tunnelled") in observed
    assert ("pull-intranet", "direct, succeeded, nothing at the run's proxy (the origin's log is not the run's)") \
        in observed
    assert all(c["status"] == "passed" for c in checks if c["check"] in ("pull-internet", "pull-intranet"))
