"""``proxyfleet config init``: a commented starter run file, every key of which is an option; the
lab's runs as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from proxyfleet.harness.cli import main, runfile
from proxyfleet.harness.cli.conformance import SECTIONS, conformance
from tests.support import HANG


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
    assert again.exit_code == 1 and "exists; --force replaces it" in again.output


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
