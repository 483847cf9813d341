"""The CI examples in ci/ parse and run the conformance command the README documents."""

import subprocess
from pathlib import Path

import yaml

CI = Path(__file__).parents[1] / "ci"


def test_github_and_gitlab_jobs_are_valid_yaml_running_conformance() -> None:
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    steps = github["jobs"]["proxyfleet"]["steps"]
    assert any("proxyfleet conformance" in str(step.get("run", "")) for step in steps)
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    job = gitlab["proxyfleet-conformance"]
    assert any("proxyfleet conformance" in line for line in job["script"])
    assert job["artifacts"]["reports"]["junit"] == "proxyfleet.xml"


def test_openshift_step_is_valid_bash() -> None:
    script = CI / "openshift-ci-step.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert "proxyfleet conformance" in script.read_text()
