"""Bad inputs to ``proxyfleet up`` and ``proxyfleet repro`` end with one clear error line and exit
status 2 before anything starts, and never echo a credential."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import HANG

BAD_INPUTS = {
    "missing proxy file": (["repro", "--proxy", "nope.yaml"], "Error: --proxy nope.yaml: no such file"),
    "invalid YAML": (["repro", "--proxy", "broken.yaml"], "Error: --proxy broken.yaml is not valid YAML (line"),
    "invalid proxy URL": (["repro", "--proxy", "ftp.yaml"],
                          "Error: --proxy ftp.yaml: invalid Proxy spec: httpProxy requires a 'http' URI scheme"),
    "unknown field": (["repro", "--proxy", "unknown.yaml"], 'Error: --proxy unknown.yaml: unknown field "spec.httpProxi"'),
    "bundle without a certificate": (["repro", "--proxy", "ok.yaml", "--ca-bundle", "empty.pem"],
                                     "Error: --ca-bundle empty.pem: holds no certificate"),
    "garbage bundle": (["repro", "--proxy", "ok.yaml", "--ca-bundle", "garbage.pem"],
                       "Error: --ca-bundle garbage.pem: not a valid PEM certificate bundle"),
    "up: missing install-config": (["up", "--state-dir", "lab", "--install-config", "nope.yaml"],
                                   "Error: --install-config nope.yaml: no such file"),
    "up: invalid install-config": (["up", "--state-dir", "lab", "--install-config", "badconfig.yaml"],
                                   'Error: --install-config badconfig.yaml: install-config: unknown field "proxi"'),
    "up: install-config with an invalid proxy": (["up", "--state-dir", "lab", "--install-config", "badproxy.yaml"],
                                                  "Error: --install-config badproxy.yaml: invalid noProxy: a b"),
    "networking of the wrong type": (["up", "--state-dir", "lab", "--install-config", "networking.yaml"],
                                     "Error: --install-config networking.yaml: install-config: networking must be a "
                                     "mapping, not a string"),
    "metadata of the wrong type": (["repro", "--proxy", "ok.yaml", "--install-config", "metadata.yaml"],
                                   "Error: --install-config metadata.yaml: install-config: metadata must be a mapping"),
    "a bundle that is a number": (["up", "--state-dir", "lab", "--install-config", "bundle5.yaml"],
                                  "Error: --install-config bundle5.yaml: install-config: additionalTrustBundle must "
                                  "be a string, not a number"),
    "a proxy that is a URL string": (["up", "--state-dir", "lab", "--install-config", "proxystring.yaml"],
                                     "Error: --install-config proxystring.yaml: install-config: proxy must be a "
                                     "mapping, not a string"),
    "recursive anchors": (["up", "--state-dir", "lab", "--install-config", "recursive.yaml"],
                          "Error: --install-config recursive.yaml is not valid YAML (line 1, column 15): YAML aliases "
                          "are not accepted"),
    "an alias bomb in the proxy": (["repro", "--proxy", "bomb.yaml"],
                                   "Error: --proxy bomb.yaml is not valid YAML (line 2, column"),
    "a cluster network entry that is a string": (["up", "--state-dir", "lab", "--install-config", "cidr.yaml"],
                                                 "Error: --install-config cidr.yaml: install-config: "
                                                 "networking.clusterNetwork[0] must be a mapping, not a string"),
}



@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_clear_line_and_exit_2_with_nothing_started(inputs: Path, case: str) -> None:
    args, message = BAD_INPUTS[case]
    scratch = inputs / "tmp"  # every temporary directory a lab or run would make lands here
    scratch.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "proxyfleet.harness", *args], cwd=inputs, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "TMPDIR": str(scratch)})
    out, err = process.communicate(timeout=HANG)
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert "Traceback" not in result.stderr and "S3cr3t" not in result.stderr
    # Nothing was started: no state directory, no scratch directory, no output but the error.
    assert not (inputs / "lab").exists() and not list(scratch.iterdir()) and not result.stdout

