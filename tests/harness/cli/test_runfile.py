"""``proxyfleet conformance --config run.yaml``: every option from a file grouped as --help groups
them, the command line over it, paths relative to the file; a bad file is one error line naming
the file and the key, never its contents; the report records the effective options and
``--config-from`` runs them again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from proxyfleet.harness.cli import main, repro, runfile, up
from proxyfleet.harness.cli.conformance import SECTIONS, conformance
from tests.support import HANG


def _options(text: str, tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return runfile.load_run_file(path, click.Context(conformance), SECTIONS)


def test_every_group_and_key_maps_to_its_option(tmp_path: Path) -> None:
    (tmp_path / "squid").mkdir()
    found = _options("""
lab: {nodes: 3, workflow: [runtime-add, change], converge-timeout: 90, keep: labs}
reconciler: {variant: no-cert-import, command: "my-operator --kubeconfig {kubeconfig}", reboot-timeout: 30,
             resync-period: 90, env: olm}
proxy: {command: "squid -N -f {config_dir}/squid.conf", config: [squid], user: proxy, etc-hosts: true}
cluster: {no-proxy: .corp.example, dry-run: false}
reports: {json: out/r.json, junit: r.xml}
""", tmp_path)
    assert found == {
        "nodes": 3, "workflows": ("runtime-add", "change"), "converge_timeout": 90.0, "keep": tmp_path / "labs",
        "variant": "no-cert-import", "reconciler_command": "my-operator --kubeconfig {kubeconfig}",
        "reconciler_reboot_timeout": 30.0, "reconciler_resync_period": 90.0, "reconciler_env": "olm",
        "proxy_command": "squid -N -f {config_dir}/squid.conf", "proxy_config": (tmp_path / "squid",),
        "proxy_user": "proxy", "proxy_etc_hosts": True, "no_proxy": ".corp.example", "dry_run": False,
        "json_path": tmp_path / "out" / "r.json", "junit": tmp_path / "r.xml"}  # paths: relative to the file
    assert _options("", tmp_path) == {} and _options("lab:\n", tmp_path) == {}


@pytest.mark.parametrize(("text", "said"), [
    ("lab:\n  nodes: ten\n", "run.yaml: lab.nodes: 'ten' is not a valid integer range"),
    ("lab:\n  nodes: 0\n", "run.yaml: lab.nodes: 0 is not in the range 1<=x<=2000"),
    ("lab:\n  nodes: [1, 2]\n", "run.yaml: lab.nodes: expected one value, not a list"),
    ("lab:\n  workflow: [nope]\n", "run.yaml: lab.workflow: 'nope' is not one of 'install-time'"),
    ("proxy:\n  password: hunter2\n", "run.yaml: unknown key proxy.password; allowed in proxy: command, image"),
    ("proxy:\n  etc-hosts: yes please\n", "run.yaml: proxy.etc-hosts: expected true or false"),
    ("lba:\n  nodes: 2\n", "run.yaml: unknown group 'lba'; allowed: lab, reconciler, proxy, cluster, reports"),
    ("lab: [hunter2]\n", "run.yaml: lab: expected a mapping of options"),
    ("- hunter2\n", "run.yaml: expected a mapping of groups"),
    ("lab: {nodes: hunter2\n", "run.yaml: not YAML at line 2"),
    ("reconciler:\n  env: k8s\n", "run.yaml: reconciler.env: 'k8s' is not one of 'none', 'olm'"),
])
def test_a_bad_run_file_is_one_error_line_naming_the_file_and_key(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "run.yaml").write_text(text)
    result = CliRunner().invoke(main, ["conformance", "--config", str(tmp_path / "run.yaml")])
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 1 and len(errors) == 1 and said in errors[0], result.output
    assert "hunter2" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("text", "more", "said"), [
    ("proxy:\n  url: http://127.0.0.1:3128\n  command: squid -N\n", [],
     "--proxy-url excludes --proxy-command and --proxy-image: start a proxy, or use one "
     "(set in run.yaml: proxy.url, proxy.command)"),
    ("cluster:\n  kubeconfig: run.yaml\n", [], "--kubeconfig needs --ssh-key (the key the Windows instances accept) "
     "(set in run.yaml: cluster.kubeconfig)"),
    # the options at fault, not those the advice names: --proxy-listen comes after the ": "
    ("proxy:\n  user: nobody\ncluster:\n  kubeconfig: run.yaml\n  ssh-key: run.yaml\n",
     ["--proxy-url", "http://127.0.0.1:3128"], "--proxy-image with --proxy-listen) (set in run.yaml: proxy.user)"),
    # only what the file set is named: --proxy-image came from the command line
    ("proxy:\n  url: http://127.0.0.1:3128\n", ["--proxy-image", "x"], "(set in run.yaml: proxy.url)"),
])
def test_options_that_conflict_name_the_keys_the_file_set(tmp_path: Path, text: str, more: list[str],
                                                           said: str) -> None:
    (tmp_path / "run.yaml").write_text(text)
    result = CliRunner().invoke(main, ["conformance", "--config", str(tmp_path / "run.yaml"), *more])
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code in (1, 2) and len(errors) == 1 and errors[0].endswith(said.replace("run.yaml", str(
        tmp_path / "run.yaml"))), result.output
    # the same options on the command line: no file to name
    alone = CliRunner().invoke(main, ["conformance", "--proxy-url", "http://127.0.0.1:3128", "--proxy-image", "x"])
    assert "set in" not in alone.output and "excludes --proxy-command" in alone.output


def test_a_flag_the_file_sets_is_turned_off_by_its_no_form(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("cluster: {dry-run: true}\nproxy: {etc-hosts: true}\n")
    given = ["--config", str(tmp_path / "run.yaml")]
    on = conformance.make_context("conformance", list(given))
    assert on.params["dry_run"] is True and on.params["proxy_etc_hosts"] is True
    off = conformance.make_context("conformance", [*given, "--no-dry-run", "--no-proxy-etc-hosts"])
    assert off.params["dry_run"] is False and off.params["proxy_etc_hosts"] is False


def test_home_relative_paths_and_redacted_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _options("reports: {json: ~/r.json}\n", tmp_path) == {"json_path": tmp_path / "home" / "r.json"}
    (tmp_path / "r.json").write_text(json.dumps({"config": {"cluster": {"second-proxy-url": "http://***:***@p:1"}}}))
    result = CliRunner().invoke(main, ["conformance", "--config-from", str(tmp_path / "r.json")])
    assert result.exit_code == 1 and "cluster.second-proxy-url: a redacted value (***) cannot be used" in result.output
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00lab")
    result = CliRunner().invoke(main, ["conformance", "--config", str(tmp_path / "binary.yaml")])
    assert result.exit_code == 1 and "not a text file" in result.output and "Traceback" not in result.output


def test_one_source_of_options_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("lab: {nodes: 1}\n")
    (tmp_path / "r.json").write_text(json.dumps({"config": {"lab": {"nodes": 1}}}))
    both = CliRunner().invoke(main, ["conformance", "--config", str(tmp_path / "run.yaml"), "--config-from",
                                     str(tmp_path / "r.json")])
    assert both.exit_code == 2 and "--config and --config-from: give one" in both.output
    (tmp_path / "old.json").write_text(json.dumps({"summary": {}}))
    old = CliRunner().invoke(main, ["conformance", "--config-from", str(tmp_path / "old.json")])
    assert old.exit_code == 1 and "no recorded configuration" in old.output


@pytest.mark.slow
def test_a_run_from_a_file_is_recorded_and_runs_again_from_its_report(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(f"""# checked in beside the reconciler
lab:
  nodes: 2
  workflow: [runtime-add]
reconciler:
  command: "{sys.executable} -m proxyfleet.harness reconcile --kubeconfig {{kubeconfig}} --ssh-port {{ssh_port}} --max-unavailable {{max_unavailable}}"
reports:
  json: first.json
""")
    first = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--config", "run.yaml",
                            "--nodes", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=HANG)
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads((tmp_path / "first.json").read_text())
    assert report["nodes"] == 1 and report["variant"] == "external"  # the command line won over the file
    assert report["config"] == {"lab": {"nodes": 1, "workflow": ["runtime-add"]}}
    # not recorded: a command line (it may hold a token) and the reports' paths (a re-run would
    # write over the report it repeats): the command is given again
    command = next(line.split("\"")[1] for line in (tmp_path / "run.yaml").read_text().splitlines() if "command:" in line)
    again = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--config-from", "first.json",
                            "--reconciler-command", command, "--json", "second.json"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=HANG)
    assert again.returncode == 0, again.stderr[-3000:]
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["config"] == report["config"] and second["variant"] == "external"
    assert [s["name"] for s in second["scenarios"]] == [s["name"] for s in report["scenarios"]]
    assert json.loads((tmp_path / "first.json").read_text()) == report  # the report it repeated is untouched


def test_repro_and_up_read_run_files_too(tmp_path: Path) -> None:
    (tmp_path / "customer-proxy.yaml").write_text("kind: Proxy\n")
    (tmp_path / "run.yaml").write_text("lab: {proxy: customer-proxy.yaml, nodes: 0, destination: [https://a.example/]}\n"
                                       "proxy: {url: http://127.0.0.1:3128}\n")
    # the file's --proxy satisfies the required option: what stops the command is the file's nodes: 0
    result = CliRunner().invoke(main, ["repro", "--config", str(tmp_path / "run.yaml")])
    assert result.exit_code == 1 and "run.yaml: lab.nodes: 0 is not in the range" in result.output, result.output
    (tmp_path / "run.yaml").write_text("lab: {proxy: customer-proxy.yaml, destination: [https://a.example/]}\n")
    assert runfile.load_run_file(tmp_path / "run.yaml", click.Context(repro.repro), repro.SECTIONS) == {
        "proxy_file": tmp_path / "customer-proxy.yaml", "internet": ("https://a.example/",)}
    (tmp_path / "up.yaml").write_text("lab: {nodes: 2, egress-firewall: 'off'}\nreconciler: {reconciler: none}\n")
    assert runfile.load_run_file(tmp_path / "up.yaml", click.Context(up.up), up.SECTIONS) == {
        "nodes": 2, "egress_firewall": "off", "reconciler": "none"}
    (tmp_path / "up.yaml").write_text("lab: {state: x}\n")
    result = CliRunner().invoke(main, ["up", "--config", str(tmp_path / "up.yaml")])
    assert result.exit_code == 1 and "unknown key lab.state; allowed in lab: nodes, linux-nodes, linux-flavour, state-dir" in result.output
