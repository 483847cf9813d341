"""``proxyfleet config init``: a commented starter run file, every key of which is an option; the
lab's runs as written."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from proxyfleet.harness.cli import main, runfile
from proxyfleet.harness.cli.config import starter
from proxyfleet.harness.cli.conformance import SECTIONS, conformance
from proxyfleet.harness.lab.vendorexamples import EXAMPLES, copy_example, examples_directory, installed_program
from proxyfleet.simulators.origins.catalog import real_ports_allowed
from tests.harness.cli.test_vendor_matrix import VENDORS, missing
from tests.support import HANG

EXAMPLES_SOURCE = Path(__file__).parents[3] / "examples"


@pytest.mark.parametrize(("options", "needs"), [([], []), (["--proxy", "url"], []),
                                                (["--cluster"], ["kubeconfig", "id_ed25519"])])
def test_config_init_writes_a_starter_every_key_of_which_is_an_option(tmp_path: Path, options: list[str],
                                                                       needs: list[str]) -> None:
    result = CliRunner().invoke(main, ["config", "init", str(tmp_path / "run.yaml"), *options])
    assert result.exit_code == 0, result.output
    for name in needs:  # what a user replaces with their own files
        (tmp_path / name).write_text("x")
    found = runfile.load_run_file(tmp_path / "run.yaml", click.Context(conformance), SECTIONS)
    assert found["json_path"] == tmp_path / "proxyfleet.json"
    assert ("kubeconfig" in found) is ("--cluster" in options)
    assert ("proxy_url" in found) is bool(options)
    again = CliRunner().invoke(main, ["config", "init", str(tmp_path / "run.yaml")])
    assert again.exit_code == 1 and "exist(s); --force replaces them" in again.output


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("as_root", [True, False])
def test_a_vendor_starter_starts_that_proxy_from_its_copied_example(tmp_path: Path, name: str,
                                                                   as_root: bool) -> None:
    """--proxy squid|httpd|trafficserver: the example's files beside the run file, and the run
    file's proxy group the vendor matrix's tested command line (the program as installed here)."""
    example = EXAMPLES[name]
    (tmp_path / "run.yaml").write_text(starter("run.yaml", name, False, as_root=as_root))
    copied = copy_example(example, tmp_path / example.directory)
    assert sorted(p.name for p in copied) == sorted(p.name for p in (EXAMPLES_SOURCE / example.directory).iterdir())
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in copied)
    found = runfile.load_run_file(tmp_path / "run.yaml", click.Context(conformance), SECTIONS)
    tested = VENDORS["apache" if name == "httpd" else name] if name != "squid" else None
    assert found["proxy_command"] == example.command.format(program=example.program_path())
    if tested is not None:  # the matrix runs the basic-auth httpd; the plain one differs only in its file
        assert found["proxy_command"] == tested.command.replace("{program}", example.program_path()).replace(
            "httpd-basic-auth.conf", "httpd.conf")
    assert found["proxy_config"] == (tmp_path / example.directory / example.config if example.config
                                     else tmp_path / example.directory,)
    assert found.get("proxy_user") == (example.user if as_root else None)
    assert found.get("proxy_etc_hosts", False) is (example.etc_hosts and as_root)


def test_the_examples_are_where_an_installed_proxyfleet_finds_them(tmp_path: Path) -> None:
    # installed (the wheel's package data) or in a checkout: the repository's examples, every file
    for example in EXAMPLES.values():
        shipped = {p.name: p.read_bytes() for p in (examples_directory() / example.directory).iterdir()}
        assert shipped == {p.name: p.read_bytes() for p in (EXAMPLES_SOURCE / example.directory).iterdir()}
    result = CliRunner().invoke(main, ["config", "init", str(tmp_path / "run.yaml"), "--proxy", "squid"])
    assert result.exit_code == 0 and "and squid/ (4 files)" in result.output
    (tmp_path / "squid" / "squid.conf").write_text("# mine\n")
    again = CliRunner().invoke(main, ["config", "init", str(tmp_path / "run.yaml"), "--proxy", "squid"])
    assert again.exit_code == 1 and "squid/squid.conf" in again.output  # nothing overwritten unasked
    assert (tmp_path / "squid" / "squid.conf").read_text() == "# mine\n"
    forced = CliRunner().invoke(main, ["config", "init", str(tmp_path / "run.yaml"), "--proxy", "squid", "--force"])
    assert forced.exit_code == 0 and (tmp_path / "squid" / "squid.conf").read_text() != "# mine\n"
    refused = CliRunner().invoke(main, ["config", "init", str(tmp_path / "c.yaml"), "--proxy", "squid", "--cluster"])
    assert refused.exit_code == 2 and "leave out --proxy" in refused.output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_vendor_starter_runs_as_written(tmp_path: Path, name: str) -> None:
    why = missing(VENDORS["apache" if name == "httpd" else name]) if name != "squid" else (
        None if installed_program("squid") else "needs Squid")
    if why is not None or not real_ports_allowed():
        pytest.skip(why or "origins on ports 80/443 need root")
    result = CliRunner().invoke(main, ["config", "init", str(tmp_path / "proxyfleet.yaml"), "--proxy", name])
    assert result.exit_code == 0, result.output
    run = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--config", "proxyfleet.yaml",
                          "--nodes", "2", "--workflow", "runtime-add"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=HANG)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((tmp_path / "proxyfleet.json").read_text())
    assert report["summary"]["passed"] == 1
    # judged through the vendor's proxy: its flows went through it, not the lab's mitmdump
    assert "through the proxy, tunnelled, origin certificate" in {
        c["observed"] for s in report["scenarios"] for c in s["checks"] if c["check"] == "pull-internet"}


@pytest.mark.slow
def test_the_lab_starter_runs_as_written(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["config", "init", str(tmp_path / "proxyfleet.yaml")]).exit_code == 0
    # as written, but two nodes and one workflow for the test's time
    run = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--config", "proxyfleet.yaml",
                          "--nodes", "2", "--workflow", "runtime-add"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=HANG)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((tmp_path / "proxyfleet.json").read_text())["summary"]["passed"] == 1
    assert (tmp_path / "proxyfleet.xml").exists() and (tmp_path / "proxyfleet.html").exists()
