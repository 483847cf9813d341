"""External reconcilers: placeholders shell-quoted, and OLM's way of handing the operator the
cluster's proxy (variables from Proxy status, empty ones dropped, a restart on every change)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from proxyfleet.harness.lab import Lab, LabSettings, admin
from proxyfleet.harness.lab.external import ExternalReconcilerError, command_line, olm_environment
from tests.support import wait_until

# A stand-in operator: records the proxy variables it was started with, then idles.
OPERATOR = """
import json, os, sys, time
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({k: os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")}) + "\\n")
time.sleep(3600)
"""


def test_placeholders_are_shell_quoted() -> None:
    argv = command_line("reconcile --kubeconfig {kubeconfig} --namespace {namespace}",
                        {"kubeconfig": "/tmp/a dir/it's kube", "namespace": "ns; rm -rf /"})
    assert argv == ["reconcile", "--kubeconfig", "/tmp/a dir/it's kube", "--namespace", "ns; rm -rf /"]
    with pytest.raises(ExternalReconcilerError, match="malformed"):
        command_line("reconcile {nope}", {"kubeconfig": "k"})


def test_olm_drops_empty_values() -> None:
    assert olm_environment({"httpProxy": "", "httpsProxy": "http://p:3128", "noProxy": ".svc"}) == \
        {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": ".svc"}
    assert olm_environment({}) == {}


async def test_olm_restarts_the_operator_with_the_proxy_status_variables(tmp_path: Path) -> None:
    script = tmp_path / "stand_in_operator.py"  # not operator.py: that would shadow the stdlib module
    script.write_text(OPERATOR)
    seen = tmp_path / "seen.jsonl"
    settings = LabSettings(nodes=1, proxy=False, reconciler_env="olm",
                           reconciler_command=f"{sys.executable} {script} {seen}")

    def starts() -> list[dict[str, str | None]]:
        return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []

    async with Lab(settings) as lab:
        await wait_until(lambda: len(starts()) == 1, what="the operator to start")
        assert starts()[0] == {"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}
        await admin.set_proxy(lab.api(), https_proxy="http://u:pw@proxy.corp.internal:3128", no_proxy=".corp")
        external = lab.external_reconciler
        assert external is not None
        # the process may write its line before the lab has counted the start: wait for both
        await wait_until(lambda: len(starts()) == 2 and external.starts == 2, what="the restart OLM does on a proxy change")
        latest = starts()[-1]
        assert latest["HTTPS_PROXY"] == "http://u:pw@proxy.corp.internal:3128"
        assert latest["HTTP_PROXY"] is None  # empty in status: not injected at all
        assert latest["NO_PROXY"] and ".corp" in latest["NO_PROXY"].split(",")
        await admin.set_proxy(lab.api())
        await wait_until(lambda: len(starts()) == 3 and starts()[-1]["HTTPS_PROXY"] is None, what="removal")
        assert (lab.state_dir / "reconciler.log").stat().st_mode & 0o777 == 0o600


# Ignores SIGTERM: only a SIGKILL ends it (so a "kill" that only asked politely would be seen).
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], "a").write("started\\n")
time.sleep(3600)
"""


async def test_killing_the_reconciler_sigkills_it_and_starts_it_again(tmp_path: Path) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    seen = tmp_path / "seen.txt"
    settings = LabSettings(nodes=1, proxy=False, reconciler_command=f"{sys.executable} {script} {seen}")

    def starts() -> int:
        return len(seen.read_text().splitlines()) if seen.exists() else 0

    async with Lab(settings) as lab:
        await wait_until(lambda: starts() == 1, what="the reconciler to start")
        external = lab.external_reconciler
        assert external is not None and external.process is not None
        first = external.process
        await lab.kill_reconciler()
        assert first.returncode == -9  # SIGKILL, not a graceful stop
        await wait_until(lambda: starts() == 2, what="the reconciler to start again")
        assert external.process is not None and external.process.returncode is None
        await external.kill()  # it would outlast the lab's SIGTERM grace at teardown
