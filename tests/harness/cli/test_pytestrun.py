"""The scenarios' pytest session is hermetic: the calling environment's PYTEST_ADDOPTS, PYTEST_PLUGINS
and installed plugins change nothing, in the session and in its xdist workers, and the caller's
environment is put back afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.harness.cli.pytestrun import AUTOLOAD_OFF, hermetic_environment, plugin_arguments, run_pytest

# PYTEST_PLUGINS naming this makes any session that honours it fail to start
MISSING_PLUGIN = "proxyfleet_no_such_plugin_module"


def test_the_environment_is_hermetic_while_the_session_runs_and_put_back_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x --collect-only")
    monkeypatch.setenv("PYTEST_PLUGINS", MISSING_PLUGIN)
    monkeypatch.delenv(AUTOLOAD_OFF, raising=False)
    with pytest.raises(RuntimeError), hermetic_environment():
        assert "PYTEST_ADDOPTS" not in os.environ and "PYTEST_PLUGINS" not in os.environ
        assert os.environ[AUTOLOAD_OFF] == "1"
        raise RuntimeError("the session failed")
    assert os.environ["PYTEST_ADDOPTS"] == "-x --collect-only"
    assert os.environ["PYTEST_PLUGINS"] == MISSING_PLUGIN
    assert AUTOLOAD_OFF not in os.environ


def test_only_the_scenarios_plugins_load_and_pytest_addopts_is_ignored(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_one.py").write_text(
        "from pathlib import Path\n\n\ndef test_runs():\n    (Path(__file__).parent / 'ran').write_text('yes')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")

    class Probe:
        names: set[str] = set()

        def pytest_configure(self, config: pytest.Config) -> None:
            Probe.names = {name for name, _ in config.pluginmanager.list_name_plugin() if name}

    monkeypatch.setenv("PYTEST_ADDOPTS", "--collect-only")
    monkeypatch.setenv("PYTEST_PLUGINS", MISSING_PLUGIN)
    code = run_pytest([str(tmp_path), "-c", str(tmp_path / "pytest.ini"), "-p", "no:cacheprovider", "-q"],
                      [Probe()], workers=False)
    assert code == 0 and (tmp_path / "ran").read_text() == "yes"  # run, not only collected
    assert {"pytest_asyncio.plugin", "proxyfleet.harness.conformance.plugin"} <= Probe.names
    # hypothesis (a test extra, so installed here) registers a pytest11 entry point: not loaded
    assert not {name for name in Probe.names if "hypothesis" in name}
    assert "xdist.plugin" not in Probe.names  # a session that starts no workers does not load it
    assert plugin_arguments(workers=True).count("xdist.plugin") == 1


def test_a_conformance_run_judges_the_same_under_a_ci_jobs_pytest_variables(tmp_path: Path) -> None:
    # two scenarios, two workers: the xdist workers inherit the session's environment, not the job's
    report = tmp_path / "r.json"
    result = subprocess.run(
        [sys.executable, "-m", "proxyfleet.harness", "conformance", "--nodes", "1", "--workers", "2",
         "--scenario", "test_no_proxy_nothing_changes", "--scenario", "test_proxy_added_at_runtime",
         "--json", str(report)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYTEST_ADDOPTS": "--collect-only -x", "PYTEST_PLUGINS": MISSING_PLUGIN})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    judged = json.loads(report.read_text())
    assert judged["summary"] == {"passed": 2, "failed": 0, "skipped": 0, "inconclusive": 0}
