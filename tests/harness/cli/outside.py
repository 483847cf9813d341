"""The embedded lab as an existing cluster, from outside: ``proxyfleet up --reconciler none`` (the
cluster and its Windows hosts) and ``proxyfleet reconcile`` (the operator under test), each a
process of its own, and the ``proxyfleet conformance --kubeconfig`` command line a user would type
from what ``up`` prints. Used by ``test_clusterrun.py`` and ``bench/bench_cluster_variants.py``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config

from proxyfleet.core.lifecycle import die_with_parent
from proxyfleet.harness.lab.assembly import well_known_plan
from tests.harness.cli.commands import wait_for_line
from tests.support import HANG


@dataclass
class OutsideLab:
    """A running ``proxyfleet up`` and what a user reads off its banner."""

    state: Path
    kubeconfig: Path
    ssh_port: int
    # With a run's own proxy: where it listens, and the files a proxy for this lab needs (the
    # hosts file and the origins' CA, from the directory ``up`` prints as "proxy files").
    run_proxy: str | None = None
    proxy_files: Path | None = None
    vendor: list[str] | None = None  # a vendor's proxy the run starts: its --proxy-command … options
    linux: dict[str, str] | None = None  # Linux workers (``up --linux-nodes``): address -> SSH user

    def api(self) -> client.ApiClient:
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def cluster_name(self) -> str:
        """What a run must be given as --target-cluster: the lab's Infrastructure names it."""
        infrastructure = client.CustomObjectsApi(self.api()).get_cluster_custom_object(
            "config.openshift.io", "v1", "infrastructures", "cluster")
        return str(infrastructure["status"]["infrastructureName"])

    def conformance_args(self, *more: str, named: bool = True) -> list[str]:
        # The lab's second proxy asks for credentials (PowerShell code in them): the change workflow
        # moves to it, with the credentials from a file as a user would give them.
        url = urllib.parse.urlsplit((self.state / "proxy2-url.txt").read_text().strip())
        auth = self.state / "proxy2-auth"
        auth.write_text(f"{urllib.parse.unquote(url.username or '')}:{urllib.parse.unquote(url.password or '')}")
        auth.chmod(0o600)
        name = ["--target-cluster", self.cluster_name()] if named else []
        return [sys.executable, "-m", "proxyfleet.harness", "conformance", "--kubeconfig", str(self.kubeconfig), *name,
                "--second-proxy-url", f"http://{url.hostname}:{url.port}", "--proxy-auth-file", str(auth),
                "--ssh-key", str(self.state / "fleet" / "id_ed25519"), "--ssh-port", str(self.ssh_port),
                "--ssh-known-hosts", str(self.state / "fleet" / "known_hosts"),
                *self._proxy_args(),
                "--no-proxy", "registry.corp.internal,10.0.5.20,intranet.corp.internal",
                "--internet-image", "quay.io/openshift/windows-test:latest",
                "--intranet-image", "registry.corp.internal/corp/agent:1.0",
                # a correct operator ends each step once converged: the deadline only bounds a broken one
                "--http-url", "http://ctldl.windowsupdate.com/", "--converge-timeout", "600",
                *(f"--linux-instance={a}={u}" for a, u in (self.linux or {}).items()), *more]


    def _proxy_args(self) -> list[str]:
        if self.run_proxy is None or self.proxy_files is None:
            return ["--proxy-url", "http://proxy.corp.internal:3128", "--proxy-ca", str(self.state / "proxy-ca.crt")]
        _, egress = well_known_plan()
        return [*(self.vendor or []), "--proxy-listen", self.run_proxy, "--proxy-url", "http://proxy.corp.internal:3128",
                "--proxy-hosts", str(self.proxy_files / "hosts"), "--proxy-egress", egress,
                "--proxy-upstream-ca", str(self.proxy_files / "public-ca.crt")]


def _stop(process: subprocess.Popen[str], timeout: float = 60) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _start_up(state: Path, extra: list[str], within: float = 180.0) -> subprocess.Popen[str]:
    """``proxyfleet up``, ready. A lab on the well-known block (``--proxy-url``) waits, with a
    deadline, while another lab on this machine holds that block (another run's, or one still
    letting go of it)."""
    deadline = time.monotonic() + within
    while True:
        up = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", "up", "--reconciler", "none", "--nodes",
                               "2", "--state-dir", str(state), *extra], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=die_with_parent)
        try:
            wait_for_line(up, "lab ready", HANG)
            return up
        except AssertionError as failure:
            _stop(up)
            if "in use by running labs" not in str(failure) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)  # the block is another lab's: ask again


@contextmanager
def outside_lab(tmp_path: Path, variant: str = "correct", run_proxy: str | None = None,
                linux_nodes: int = 0) -> Iterator[OutsideLab]:
    """``proxyfleet up --reconciler none`` and ``proxyfleet reconcile`` (the "operator"), each its own
    process. ``run_proxy`` ("ADDR:PORT"): the lab's proxy name points there (``up --proxy-url``), where
    the conformance run will start its own proxy; until then a bare listening socket stands in, since
    ``up`` checks that its proxy listens. Such a lab takes the well-known address block: one at a time.
    ``linux_nodes``: RHCOS workers beside the Windows nodes (the operator configures them too), named
    to the run with ``--linux-instance``."""
    state = tmp_path / "lab"
    placeholder: socket.socket | None = None
    extra: list[str] = ["--linux-nodes", str(linux_nodes)] if linux_nodes else []
    if run_proxy is not None:
        address, port = run_proxy.rsplit(":", 1)
        placeholder = socket.create_server((address, int(port)))
        extra += ["--proxy-url", f"http://{run_proxy}"]
    up = _start_up(state, extra)
    operator: subprocess.Popen[str] | None = None
    try:
        proxy_files = None
        if placeholder is not None:
            placeholder.close()
            assert up.stdout is not None
            for line in up.stdout:  # the banner is complete: "lab ready" comes after it
                if line.startswith("proxy files:"):
                    proxy_files = Path(line.split()[2])
                if line.startswith("reconciler:"):
                    break
            assert proxy_files is not None, "up printed no proxy files"
        manifest = json.loads((state / "fleet" / "fleet.json").read_text())
        lab = OutsideLab(state, state / "cluster" / "kubeconfig", int(manifest["nodes"][0]["port"]), run_proxy,
                         proxy_files, linux={n["address"]: n["username"] for n in manifest["nodes"]
                                             if n["kind"] == "linux"})
        operator = subprocess.Popen(
            [sys.executable, "-m", "proxyfleet.harness", "reconcile", "--kubeconfig", str(lab.kubeconfig),
             "--ssh-port", str(lab.ssh_port), "--resync-seconds", "10", "--variant", variant],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=die_with_parent)
        wait_for_line(operator, "reconciling Windows instances", HANG)
        yield lab
    finally:
        if placeholder is not None:
            placeholder.close()
        if operator is not None:
            _stop(operator)
        _stop(up)
