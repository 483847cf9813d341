"""The settings list is the installed systemd's own, where one is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from proxyfleet.core.systemd.systemdkeys import KNOWN_KEYS, SYSTEMD_VERSION

SYSTEMD = Path("/lib/systemd/systemd")


def test_the_sections_of_a_service_unit() -> None:
    assert set(KNOWN_KEYS) == {"Unit", "Service", "Install"}
    assert {"Environment", "EnvironmentFile", "ExecStart", "UnsetEnvironment"} <= KNOWN_KEYS["Service"]
    assert "Environment" not in KNOWN_KEYS["Unit"]


@pytest.mark.skipif(not SYSTEMD.exists(), reason="needs systemd (apt-get install systemd)")
def test_they_are_the_installed_systemds(tmp_path: Path) -> None:
    version = subprocess.run([str(SYSTEMD), "--version"], capture_output=True, text=True, timeout=60).stdout
    if f"systemd {SYSTEMD_VERSION} " not in version:
        pytest.skip(f"the list is systemd {SYSTEMD_VERSION}'s; this is {version.splitlines()[0]}")
    dump = subprocess.run([str(SYSTEMD), "--dump-configuration-items"], capture_output=True, text=True,
                          timeout=60).stdout
    sections: dict[str, set[str]] = {}
    current = ""
    for line in dump.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = set()
        elif "=" in line:
            sections[current].add(line.split("=", 1)[0])
    assert {name: frozenset(sections[name]) for name in KNOWN_KEYS} == KNOWN_KEYS
