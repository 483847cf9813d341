"""Reading a unit file or drop-in: sections, continuations, comments, and systemd's warnings —
compared with Debian's systemd-analyze verify (252) where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proxyfleet.core.systemd.execenvironment import Warnings, environment_setting
from proxyfleet.core.systemd.specifiers import SpecifierContext
from proxyfleet.core.systemd.unitfiles import parse_unit_file

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

DROP_IN = (
    "Outside=1\n"
    "[Service]\n"
    "Environment=A=1%4 \\\n"
    "# a comment inside the continued line\n"
    "; and another\n"
    "  B=2%4\n"
    "X-Vendor=ours\n"
    "NoEquals\n"
    "Bogus=1\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n"
    "Nope=1\n"
    "[Socket]\n"
    "ListenStream=80\n"
    "[X-Mine]\n"
    "Anything=1\n"
    " [Service] \n"
    "Environment = C=3%4\n"
    "EnvironmentFile=-/etc/mco/proxy.env\n"
    "Environment=D=4%4\\\n"
)


def model(path: str, text: str = DROP_IN) -> tuple[list[str], list[tuple[str, str, str, int]]]:
    warnings = Warnings()
    found = parse_unit_file(text, path, warnings)
    env: dict[str, str] = {}
    context = SpecifierContext("demo.service")
    for a in found:
        if a.key == "Environment":
            environment_setting(a.value, context, env, warnings, a.path, a.line)
    return warnings.lines, [(a.section, a.key, a.value, a.line) for a in found]


def test_sections_continuations_and_what_is_ignored() -> None:
    lines, found = model("/d.conf")
    # the joined line's words (the whitespace between them is not observable from outside)
    assert found[0][2].split() == ["A=1%4", "B=2%4"]
    found[0] = (*found[0][:2], "A=1%4 B=2%4", found[0][3])
    assert found == [
        ("Service", "Environment", "A=1%4 B=2%4", 6),  # reported at its last line
        ("Install", "WantedBy", "multi-user.target", 11),
        ("Service", "Environment", "C=3%4", 18),
        ("Service", "EnvironmentFile", "-/etc/mco/proxy.env", 19),
        ("Service", "Environment", "D=4%4", 21),  # a continuation the file ended: one line past it
    ]
    assert lines[:6] == [
        "/d.conf:1: Assignment outside of section. Ignoring.",
        "/d.conf:8: Missing '=', ignoring line.",
        "/d.conf:9: Unknown key 'Bogus' in section [Service], ignoring.",
        "/d.conf:12: Unknown key 'Nope' in section [Install], ignoring.",
        "/d.conf:13: Unknown section 'Socket'. Ignoring.",
        "/d.conf:6: Failed to resolve specifiers in A=1%4, ignoring: Invalid slot",
    ]


def test_an_invalid_section_header_ends_the_file() -> None:
    lines, found = model("/d.conf", "[Service]\nEnvironment=A=1\n[Service\nEnvironment=B=1\n")
    assert [f[2] for f in found] == ["A=1"]
    assert lines == ["/d.conf:3: Invalid section header '[Service'"]


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="needs systemd-analyze (apt-get install systemd)")
@pytest.mark.parametrize("text", [DROP_IN, "[Service]\nEnvironment=A=1%4\n[Service\nEnvironment=B=1%4\n"])
def test_the_warnings_are_systemds_own(tmp_path: Path, text: str) -> None:
    units = tmp_path / "etc" / "systemd" / "system"
    (units / "demo.service.d").mkdir(parents=True)
    (units / "demo.service").write_text("[Unit]\nDescription=demo\n[Service]\nExecStart=/bin/true\n")
    drop_in = units / "demo.service.d" / "http-proxy.conf"
    drop_in.write_text(text)
    assert SYSTEMD_ANALYZE is not None
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", f"--root={tmp_path}", "demo.service"],
                          capture_output=True, text=True, timeout=120)
    real = [line for line in done.stderr.splitlines() if line.startswith(f"{drop_in}:")]
    modelled, _ = model(str(drop_in), text)
    # systemd logs while it parses: a setting's own warnings come where its line is
    assert sorted(modelled, key=_line) == real


def _line(warning: str) -> int:
    return int(warning.split(":")[1])
