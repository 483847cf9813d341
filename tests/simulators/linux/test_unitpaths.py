"""Which unit file and drop-ins systemd reads for a service, and in what order — compared with
Debian's systemd-analyze verify (252) on the same directory tree where it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from proxyfleet.simulators.linux.unitpaths import unit_sources

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

# (directory, drop-in file) — equally named files in several directories, prefixes, the type's.
DROP_INS = [
    ("/usr/lib/systemd/system/kube-proxy.service.d", "10-mco-default-env.conf"),
    ("/etc/systemd/system/kube-proxy.service.d", "10-mco-default-env.conf"),  # replaces /usr/lib's
    ("/run/systemd/system/kube-proxy.service.d", "20-run.conf"),
    ("/usr/lib/systemd/system/kube-proxy.service.d", "20-run.conf"),  # /run's wins
    ("/etc/systemd/system/kube-.service.d", "05-prefix.conf"),
    ("/etc/systemd/system/kube-.service.d", "30-both.conf"),
    ("/etc/systemd/system/kube-proxy.service.d", "30-both.conf"),  # the unit's own beats its prefix's
    ("/etc/systemd/system/service.d", "00-every-service.conf"),
    ("/usr/lib/systemd/system/kube-proxy.service.d", "40-masked.conf"),
    ("/usr/lib/systemd/system/kube-proxy.service.d", "50-last.conf"),
    ("/usr/lib/systemd/system/kube-proxy.service.d", "README"),  # not a .conf: not read
]
MASK = "/etc/systemd/system/kube-proxy.service.d/40-masked.conf"


def build(root: Path) -> None:
    unit = root / "usr/lib/systemd/system/kube-proxy.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Unit]\nDescription=kube-proxy\n[Service]\nExecStart=/bin/true\n")
    for directory, name in DROP_INS:
        path = root / directory.lstrip("/") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        # an unknown specifier makes systemd name the file and the setting as it reads it
        path.write_text(f"[Service]\nEnvironment=FROM=%4{directory}/{name}\n")
    (root / MASK.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/null", root / MASK.lstrip("/"))


def test_equally_named_drop_ins_the_higher_directory_wins_and_all_apply_by_name(tmp_path: Path) -> None:
    build(tmp_path)
    found = unit_sources(tmp_path, "kube-proxy.service")
    assert found.fragment == "/usr/lib/systemd/system/kube-proxy.service" and not found.masked
    assert list(found.drop_ins) == [
        "/etc/systemd/system/service.d/00-every-service.conf",
        "/etc/systemd/system/kube-.service.d/05-prefix.conf",
        "/etc/systemd/system/kube-proxy.service.d/10-mco-default-env.conf",
        "/run/systemd/system/kube-proxy.service.d/20-run.conf",
        "/etc/systemd/system/kube-proxy.service.d/30-both.conf",
        "/usr/lib/systemd/system/kube-proxy.service.d/50-last.conf",
    ]
    os.symlink("/dev/null", tmp_path / "etc/systemd/system/kube-proxy.service")
    assert unit_sources(tmp_path, "kube-proxy.service").masked


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="needs systemd-analyze (apt-get install systemd)")
def test_the_order_is_systemds_own(tmp_path: Path) -> None:
    build(tmp_path)
    assert SYSTEMD_ANALYZE is not None
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", f"--root={tmp_path}", "kube-proxy.service"],
                          capture_output=True, text=True, timeout=120)
    read = [line.split(":", 1)[0].removeprefix(str(tmp_path)) for line in done.stderr.splitlines()
            if "Failed to resolve specifiers in FROM=" in line]
    assert read == list(unit_sources(tmp_path, "kube-proxy.service").drop_ins), done.stderr
