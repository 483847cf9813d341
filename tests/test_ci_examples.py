"""The CI examples in ci/ parse and run the conformance command the README documents."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CI = Path(__file__).parents[1] / "ci"


def _script(job: dict[str, object]) -> list[str]:
    """A GitLab job's script lines, anchors' nested lists flattened as GitLab does."""
    lines: list[str] = []
    for entry in job["script"]:  # type: ignore[attr-defined]
        lines += entry if isinstance(entry, list) else [entry]
    return lines


def test_github_and_gitlab_jobs_are_valid_yaml_running_conformance() -> None:
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    steps = github["jobs"]["proxyfleet"]["steps"]
    assert any("proxyfleet conformance" in str(step.get("run", "")) for step in steps)
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    job = gitlab["proxyfleet-conformance"]
    assert any("proxyfleet conformance" in line for line in _script(job))
    assert job["artifacts"]["reports"]["junit"] == "proxyfleet-*.xml"
    assert gitlab["proxyfleet-merge"]["artifacts"]["reports"]["junit"] == "proxyfleet.xml"


def test_the_jobs_run_the_parts_side_by_side_and_merge_them() -> None:
    """Each CI's own parallelism runs one part per job (--shard K/N), and a merge job that runs
    even when a part failed joins every part's JSON report into the run's reports."""
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    matrix = github["jobs"]["proxyfleet"]["strategy"]["matrix"]["shard"]
    assert matrix == list(range(1, int(github["env"]["SHARDS"]) + 1))
    assert github["jobs"]["proxyfleet"]["strategy"]["fail-fast"] is False
    run = next(str(s["run"]) for s in github["jobs"]["proxyfleet"]["steps"] if "proxyfleet conformance" in str(s.get("run")))
    assert '--shard "${{ matrix.shard }}/$SHARDS"' in run
    merge = github["jobs"]["merge"]
    assert merge["needs"] == "proxyfleet" and merge["if"] == "always()"
    assert any("proxyfleet report merge parts/proxyfleet-part-*/proxyfleet.json" in str(s.get("run"))
               for s in merge["steps"])
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    assert gitlab["proxyfleet-conformance"]["parallel"] >= 2
    assert any('--shard "$CI_NODE_INDEX/$CI_NODE_TOTAL"' in line for line in _script(gitlab["proxyfleet-conformance"]))
    assert gitlab["proxyfleet-merge"]["when"] == "always"
    assert any("proxyfleet report merge proxyfleet-[0-9]*.json" in line for line in _script(gitlab["proxyfleet-merge"]))


def test_the_jobs_install_a_wheel_built_from_a_source_the_consumer_provides() -> None:
    """proxyfleet is on no package index: each job builds the wheel test_packaging builds, from
    $PROXYFLEET_SOURCE, and installs it — never a URL that does not exist."""
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    commands = [str(step.get("run", "")) for job in github["jobs"].values() for step in job["steps"]]
    commands += _script(gitlab["proxyfleet-conformance"]) + _script(gitlab["proxyfleet-merge"])
    install = "\n".join(c for c in commands if "pip " in c)
    for job in (install.split("python -m pip wheel")[1:]):
        assert job.lstrip().startswith('--no-deps --wheel-dir dist "$PROXYFLEET_SOURCE"'), job
    assert install.count("python -m pip install dist/proxyfleet-*.whl") == 4  # each CI: the parts and the merge
    assert "git+" not in install and "pip install proxyfleet" not in install
    for template in ("github-actions.yml", "gitlab-ci.yml"):
        assert "proxyfleet is not on the Python package index" in (CI / template).read_text()
    assert "PROXYFLEET_SOURCE" in github["env"]
    assert all("PROXYFLEET_SOURCE" in gitlab[job]["variables"] for job in ("proxyfleet-conformance", "proxyfleet-merge"))


def test_the_jobs_run_from_a_checked_in_run_file_that_config_init_writes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from proxyfleet.harness.cli import main

    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    run = next(str(s["run"]) for s in github["jobs"]["proxyfleet"]["steps"] if "proxyfleet conformance" in str(s.get("run")))
    assert '--config "$PROXYFLEET_RUN_FILE"' in run
    assert '--config "$PROXYFLEET_RUN_FILE"' in next(line for line in _script(gitlab["proxyfleet-conformance"])
                                                    if "proxyfleet conformance" in line)
    for env in (github["jobs"]["proxyfleet"]["env"], gitlab["proxyfleet-conformance"]["variables"]):
        assert env["PROXYFLEET_RUN_FILE"] == "ci/proxyfleet.yaml"
    # the file the templates name, as `proxyfleet config init` writes it, is a valid run file
    assert CliRunner().invoke(main, ["config", "init", str(tmp_path / "proxyfleet.yaml")]).exit_code == 0
    result = CliRunner().invoke(main, ["conformance", "--config", str(tmp_path / "proxyfleet.yaml"), "--nodes", "0"])
    assert "Invalid value for '--nodes'" in result.output  # the file was read; the command line won


def test_openshift_step_is_valid_bash() -> None:
    script = CI / "openshift-ci-step.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert "proxyfleet conformance" in script.read_text()


# What the step's command passes the reconciler it judges; the test below runs it through faults.
TESTED_ARGUMENTS = "--kubeconfig {kubeconfig} --ssh-port {ssh_port} --max-unavailable {max_unavailable}"


def test_every_reconciler_command_shown_to_users_is_the_tested_one() -> None:
    """Each reconciler command template the README, the CI examples and ``config init`` show is the
    step's, tested through ``faults`` below, with only the program changed. One without
    ``{max_unavailable}`` starts the reference at its own budget of 1: with the faults lab's stuck
    node counted against it (as it must be), nothing else could roll — a false failure."""
    from proxyfleet.harness.cli.config import LAB

    sources = {"README.md": (CI.parent / "README.md").read_text(), "config init": LAB,
               **{f"ci/{p.name}": p.read_text() for p in CI.iterdir()}}
    templates = [(name, match) for name, text in sources.items()
                 for match in re.findall(r"[\w$\"{}-]+ --kubeconfig \{kubeconfig\}[^\"'\n]*", text)]
    assert len(templates) >= 3, templates  # README's run file, config init's, the step's
    for name, template in templates:
        assert template.split(" ", 1)[1].startswith(TESTED_ARGUMENTS), (name, template)


@pytest.mark.slow
@pytest.mark.longest
def test_the_openshift_step_passes_faults_with_the_reference_at_its_own_defaults(tmp_path: Path) -> None:
    """The reference reconciler started as the step starts a vendor's binary, with its own defaults
    (a 600 s reboot timeout, as the real operator waits): the stuck node's report comes after ten
    minutes and the judge waits for it instead of failing a correct operator."""
    if shutil.which("proxyfleet") is None and not (Path(sys.executable).parent / "proxyfleet").exists():
        pytest.skip("needs the proxyfleet command installed")
    env = {**os.environ, "ARTIFACT_DIR": str(tmp_path), "PROXYFLEET_NODES": "5",
           "RECONCILER_BINARY": f"{sys.executable} -m proxyfleet.harness reconcile",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", str(CI / "openshift-ci-step.sh"), "--workflow", "faults"], env=env,
                          capture_output=True, text=True, timeout=3000)
    report = json.loads((tmp_path / "proxyfleet.json").read_text())
    assert done.returncode == 0, done.stderr[-3000:]
    stuck = [c for s in report["scenarios"] for c in s["checks"] if c["check"] == "reported"]
    assert stuck and all(c["status"] == "passed" for c in stuck)
    notes = [t.get("note", "") for s in report["scenarios"] for t in s["timeline"]]
    assert any("reboot timeout (600 s)" in n for n in notes), notes
