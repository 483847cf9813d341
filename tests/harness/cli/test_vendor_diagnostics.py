"""A vendor's proxy that is set up wrong is told what to change, from evidence the lab owns (the
nodes' records, the origins' logs, the firewall's refusals) — and one that cannot choose its
outgoing address is still usable. tinyproxy (Debian's, as a process) stands for any proxy whose
log the judge does not need: it writes no status codes at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.simulators.origins.catalog import real_ports_allowed

TINYPROXY = shutil.which("tinyproxy") or ("/usr/bin/tinyproxy" if Path("/usr/bin/tinyproxy").exists() else None)
EXAMPLE = Path(__file__).parents[3] / "examples" / "tinyproxy"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    TINYPROXY is None or not real_ports_allowed() or os.geteuid() != 0,
    reason="needs tinyproxy (apt-get install tinyproxy), ports 80/443 and root (--proxy-etc-hosts)")]


def _run(tmp_path: Path, *options: str, bind: bool = True) -> dict[str, object]:
    config = tmp_path / "tinyproxy"
    shutil.copytree(EXAMPLE, config)
    if not bind:  # what a proxy that cannot choose its outgoing address does
        text = (config / "tinyproxy.conf").read_text()
        assert "Bind {egress_address}" in text
        (config / "tinyproxy.conf").write_text(text.replace("Bind {egress_address}", "# no Bind"))
    report = tmp_path / "r.json"
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--json", str(report),
                             "--nodes", "2", "--workflow", "runtime-add", "--converge-timeout", "60",
                             "--proxy-command", f"{TINYPROXY} -d -c {{config_dir}}/tinyproxy.conf",
                             "--proxy-config", str(config), "--proxy-user", "tinyproxy", *options],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert report.exists(), result.stderr[-3000:]
    data: dict[str, object] = json.loads(report.read_text())
    data["returncode"] = result.returncode
    return data


def _failed(report: dict[str, object]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for scenario in report["scenarios"]:  # type: ignore[attr-defined]
        for check in scenario["checks"]:
            if check["status"] == "failed":
                found.setdefault(check["check"], set()).add(check["observed"])
    return found


def test_a_proxy_that_cannot_resolve_the_labs_names_is_told_so(tmp_path: Path) -> None:
    report = _run(tmp_path)  # no --proxy-etc-hosts: tinyproxy asks DNS, which knows none of them
    assert report["returncode"] == 1
    failed = _failed(report)
    assert set(failed) == {"pull-internet", "fetch-http"}, failed  # the intranet goes direct
    for texts in failed.values():
        assert all("the origin never saw the request: your proxy could not reach" in t and
                   "it must resolve the lab's names through {hosts_file} (or run with --proxy-etc-hosts)" in t
                   for t in texts), texts


def test_a_proxy_leaving_from_the_wrong_address_is_told_which_it_must_use(tmp_path: Path) -> None:
    report = _run(tmp_path, "--proxy-etc-hosts", bind=False)
    assert report["returncode"] == 1
    failed = _failed(report)
    assert set(failed) == {"pull-internet", "fetch-http"}, failed
    for texts in failed.values():
        assert all("the egress firewall refused your proxy's connection from 127.0.0.1; the internet origins "
                   "accept only 127.20." in t and "--proxy-unbound-egress" in t for t in texts), texts


def test_a_proxy_that_cannot_choose_its_outgoing_address_is_still_usable(tmp_path: Path) -> None:
    report = _run(tmp_path, "--proxy-etc-hosts", "--proxy-unbound-egress", bind=False)
    assert report["returncode"] == 0, _failed(report)
    assert report["summary"] == {"passed": 1, "failed": 0, "skipped": 0, "inconclusive": 0}
