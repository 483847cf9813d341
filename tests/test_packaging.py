"""The wheel installs one import namespace, ``proxyfleet``, and carries its data files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_the_wheel_holds_only_the_proxyfleet_namespace(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("proxyfleet-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"proxyfleet"}
    for expected in ("proxyfleet/harness/cli/__init__.py", "proxyfleet/core/noproxy/go.py",
                     "proxyfleet/simulators/proxy/addon.py", "proxyfleet/simulators/windows/powershell/SUBSET.md",
                     "proxyfleet/scenarios/test_runtime_add.py", "proxyfleet/core/py.typed"):
        assert expected in names, expected
    assert not any(name.startswith("proxyfleet/__init__") for name in names)  # a namespace: no owner
