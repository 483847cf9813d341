"""``python -m proxyfleet.harness`` is the ``proxyfleet`` command, under that name."""

from __future__ import annotations

import subprocess
import sys

from tests.support import HANG


def test_the_module_runs_the_command_as_proxyfleet() -> None:
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "--help"], capture_output=True, text=True,
                            timeout=HANG, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: proxyfleet ")
