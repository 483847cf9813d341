"""The node-aware commands without a shell: systemctl's verbs and words, update-ca-trust by flavour."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import certifi
import pytest
import trustme

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.linux.nodecommands import LinuxNodeModel, commands_for, run_command, unit_name
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE, Flavour, create_root
from proxyfleet.simulators.linux.servicemanager import ServiceManager
from proxyfleet.simulators.linux.truststores import RHCOS

SYSTEM_CAS = Path(certifi.where()).read_bytes()


def model(root: Path, flavour: Flavour = RHCOS_NODE) -> LinuxNodeModel:
    create_root(root, flavour, SYSTEM_CAS, "worker-a")
    ticks = itertools.count(100)
    node = LinuxNodeModel(root, flavour, ServiceManager(root), lambda: float(next(ticks)))
    node.systemd.boot(flavour.enabled)
    return node


def test_a_name_without_a_suffix_is_a_service() -> None:
    assert [unit_name(n) for n in ("kubelet", "crio.service", "proxy.socket")] == \
        ["kubelet.service", "crio.service", "proxy.socket"]


def test_try_restart_restarts_only_what_runs_and_the_clock_says_when(tmp_path: Path) -> None:
    node = model(tmp_path)
    before = node.systemd.running["kubelet.service"]
    assert run_command(node, "systemctl", ["stop", "crio"]).code == 0
    assert run_command(node, "systemctl", ["--no-block", "try-restart", "crio", "kubelet"]).code == 0
    assert "crio.service" not in node.systemd.running  # stopped stays stopped
    after = node.systemd.running["kubelet.service"]
    assert after.pid != before.pid and after.started_at > before.started_at
    quiet = run_command(node, "systemctl", ["-q", "is-active", "crio"])
    assert (quiet.code, quiet.stdout) == (3, "")
    assert run_command(node, "systemctl", ["daemon-reload", "kubelet"]).stderr == "Too many arguments.\n"
    assert run_command(node, "systemctl", ["-z"]).stderr == "systemctl: invalid option -- 'z'\n"


def test_update_ca_trust_is_rhcos_only_and_serves_only_extract(tmp_path: Path) -> None:
    assert commands_for(RHCOS_NODE) == ("systemctl", "update-ca-trust")
    assert commands_for(DEBIAN_NODE) == ("systemctl",)
    node = model(tmp_path / "rhcos")
    ca = trustme.CA().cert_pem.bytes()
    before = len(certificates_in_bundle((tmp_path / "rhcos" / RHCOS.bundle.lstrip("/")).read_bytes()))
    (tmp_path / "rhcos" / RHCOS.anchors.lstrip("/") / "proxy.pem").write_bytes(ca)
    assert run_command(node, "update-ca-trust", ["extract"]).code == 0
    bundle = (tmp_path / "rhcos" / RHCOS.bundle.lstrip("/")).read_bytes()
    assert certificates_in_bundle(ca)[0].thumbprint in {c.thumbprint for c in certificates_in_bundle(bundle)}
    # RHCOS's coreos-update-ca-trust.service (what the Machine Config Operator restarts): the same
    # extraction, skipped while the anchors directory is empty (its condition), never an error
    (tmp_path / "rhcos" / RHCOS.anchors.lstrip("/") / "second.pem").write_bytes(trustme.CA().cert_pem.bytes())
    assert run_command(node, "systemctl", ["restart", "coreos-update-ca-trust.service"]).code == 0
    bundle = (tmp_path / "rhcos" / RHCOS.bundle.lstrip("/")).read_bytes()
    assert len(certificates_in_bundle(bundle)) == before + 2
    for anchor in (tmp_path / "rhcos" / RHCOS.anchors.lstrip("/")).iterdir():
        anchor.unlink()
    assert run_command(node, "systemctl", ["start", "coreos-update-ca-trust"]).code == 0
    assert (tmp_path / "rhcos" / RHCOS.bundle.lstrip("/")).read_bytes() == bundle  # skipped: nothing extracted
    refused = run_command(node, "update-ca-trust", ["--fresh"])
    assert refused.code == 1 and "serves only 'extract'" in refused.stderr
    debian = model(tmp_path / "debian", DEBIAN_NODE)
    assert run_command(debian, "update-ca-trust", []).code == 127
    assert run_command(debian, "crictl", ["pull", "x"]).stderr == "sh: 1: crictl: not found\n"


def test_every_immediate_reboot_spelling_asks_the_node_once_and_returns_zero(tmp_path: Path) -> None:
    node = model(tmp_path / "node")
    asked: list[str] = []
    node.power = lambda: asked.append("reboot")
    for name, args in [("systemctl", ["reboot"]), ("systemctl", ["--no-block", "reboot"]), ("reboot", []),
                       ("shutdown", ["-r", "now"]), ("shutdown", ["--reboot", "+0"])]:
        done = run_command(node, name, args)
        assert (done.code, done.stdout, done.stderr) == (0, "", ""), (name, args)
    assert asked == ["reboot"] * 5


def test_a_reboot_is_refused_where_it_is_not_modelled_never_ignored(tmp_path: Path) -> None:
    node = model(tmp_path / "node")
    refused = run_command(node, "systemctl", ["reboot"])  # no power cycle: a tree without its server
    assert refused.code == 1 and "this node has no power cycle" in refused.stderr
    node.power = lambda: pytest.fail("asked to reboot")
    for name, args, said in [
        ("shutdown", ["-r"], "does not model '-r'"),  # a minute from now: scheduled, not modelled
        ("shutdown", ["-c"], "does not model '-c'"),
        ("reboot", ["--force"], "does not model '--force'"),
        ("poweroff", [], "does not model halting or powering off"),
        ("systemctl", ["reboot", "firmware"], "does not model a reboot argument"),
        ("systemctl", ["halt"], "does not model 'halt'"),
    ]:
        done = run_command(node, name, args)
        assert done.code == 1 and said in done.stderr, (name, args, done.stderr)


def test_systemctls_other_names_are_links_not_commands_of_their_own() -> None:
    assert "reboot" not in commands_for(RHCOS_NODE) and "systemctl" in commands_for(DEBIAN_NODE)


OPTION_ERRORS = [
    (["show", "-p"], "systemctl: option requires an argument -- 'p'"),
    (["-x", "is-active", "kubelet"], "systemctl: invalid option -- 'x'"),
    (["-qz", "is-active", "kubelet"], "systemctl: invalid option -- 'z'"),
    (["--frob"], "systemctl: unrecognized option '--frob'"),
    (["--quiet=1", "is-active", "kubelet"], "systemctl: option '--quiet' doesn't allow an argument"),
    (["show", "--property"], "systemctl: option '--property' requires an argument"),
]


@pytest.mark.parametrize(("args", "said"), OPTION_ERRORS)
def test_option_errors_are_getopts_own(tmp_path: Path, args: list[str], said: str) -> None:
    done = run_command(model(tmp_path / "node"), "systemctl", args)
    assert (done.code, done.stdout, done.stderr) == (1, "", said + "\n")


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="the oracle is Debian's systemctl (systemd)")
@pytest.mark.parametrize(("args", "said"), OPTION_ERRORS)
def test_the_option_errors_are_what_the_real_systemctl_says(args: list[str], said: str) -> None:
    # options are read before systemctl talks to any manager: safe to ask the host's own
    real = subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)
    assert (real.returncode, real.stderr) == (1, said + "\n")


def test_short_options_bundle_and_options_go_anywhere(tmp_path: Path) -> None:
    node = model(tmp_path / "node")
    pid = str(node.systemd.running["kubelet.service"].pid)
    for args in (["show", "-pMainPID", "--value", "kubelet"], ["--value", "show", "kubelet", "-p", "MainPID"],
                 ["show", "--property=MainPID", "--value", "--", "kubelet"]):
        done = run_command(node, "systemctl", args)
        assert (done.code, done.stdout) == (0, pid + "\n"), args
    quiet = run_command(node, "systemctl", ["-qp", "MainPID", "is-active", "crio"])
    assert (quiet.code, quiet.stdout) == (0, "")


def test_exec_main_start_timestamp_in_each_style_and_kept_after_a_stop(tmp_path: Path) -> None:
    node = model(tmp_path)
    node.systemd.wall_clock = lambda: 1_795_000_000.25  # Wed 2026-11-18 11:06:40.25 UTC
    assert run_command(node, "systemctl", ["restart", "kubelet"]).code == 0
    shown = {style: run_command(node, "systemctl", ["show", f"--timestamp={style}", "-p", "ExecMainStartTimestamp",
                                                    "--value", "kubelet"]).stdout
             for style in ("pretty", "us+utc", "unix")}
    assert shown == {"pretty": "Wed 2026-11-18 11:06:40 UTC\n", "us+utc": "Wed 2026-11-18 11:06:40.250000 UTC\n",
                     "unix": "@1795000000\n"}
    assert run_command(node, "systemctl", ["stop", "kubelet"]).code == 0
    assert run_command(node, "systemctl", ["show", "-p", "ExecMainStartTimestamp", "kubelet"]).stdout == \
        "ExecMainStartTimestamp=Wed 2026-11-18 11:06:40 UTC\n"
    assert run_command(node, "systemctl", ["show", "-p", "ExecMainStartTimestamp", "never.service"]).stdout == \
        "ExecMainStartTimestamp=\n"
    assert run_command(node, "systemctl", ["show", "-p", "LoadState", "--value", "never", "kubelet"]).stdout == \
        "not-found\n\nloaded\n"
    refused = run_command(node, "systemctl", ["show", "--timestamp=soon", "-p", "MainPID", "kubelet"])
    assert (refused.code, refused.stderr) == (1, "Invalid value: soon.\n")


def test_the_managers_environment_verbs_in_systemctls_words(tmp_path: Path) -> None:
    node = model(tmp_path)
    proxy = "http://user:p@ss@proxy.corp:3128"
    assert run_command(node, "systemctl", ["set-environment", f"HTTP_PROXY={proxy}", "NO_PROXY=.a b"]).code == 0
    shown = run_command(node, "systemctl", ["show-environment"])
    assert shown.code == 0 and f"HTTP_PROXY={proxy}\n" in shown.stdout and "NO_PROXY=$'.a b'\n" in shown.stdout
    assert run_command(node, "systemctl", ["restart", "crio"]).code == 0
    assert node.systemd.running["crio.service"].environment["HTTP_PROXY"] == proxy
    assert run_command(node, "systemctl", ["unset-environment", "HTTP_PROXY", "NO_PROXY"]).code == 0
    assert "HTTP_PROXY" not in run_command(node, "systemctl", ["show-environment"]).stdout
    for args, said in [(["set-environment", "NOEQUALS"], "Failed to set environment: Invalid environment assignments\n"),
                       (["set-environment", "1A=b"], "Failed to set environment: Invalid environment assignments\n"),
                       (["unset-environment", "1A"],
                        "Failed to set environment: Invalid environment variable names or assignments\n"),
                       (["set-environment"], "Too few arguments.\n"),
                       (["show-environment", "x"], "Too many arguments.\n")]:
        refused = run_command(node, "systemctl", args)
        assert (refused.code, refused.stderr) == (1, said), args
