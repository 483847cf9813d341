"""The environment systemd gives a service: Environment= words, EnvironmentFile= paths and contents.

The warnings are compared with Debian's real ``systemd-analyze verify`` (252) where it is
installed (.ci/run installs it): the same lines, word for word, for the same drop-in. Values are
compared through it too: a word ending in the unknown specifier ``%4`` makes systemd quote the
word as it read it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proxyfleet.core.systemd.execenvironment import (
    EnvironmentFileError,
    EnvironmentFileRef,
    Warnings,
    environment_file_setting,
    environment_setting,
    load_environment_file,
    parse_environment_file,
    service_environment,
)
from proxyfleet.core.systemd.specifiers import SpecifierContext

DEMO = SpecifierContext("demo.service", fragment_path="/etc/systemd/system/demo.service")

# One setting per line of a [Service] drop-in: what a proxy reconciler may write, right and wrong.
CORPUS = [
    ("Environment", '"HTTP_PROXY=http://u:p%40ss@proxy:3128" "NO_PROXY=a b"'),
    ("Environment", "http_proxy=http://u:p%%40ss@proxy:3128"),
    ("Environment", "HTTPS_PROXY=http://proxy.corp:3128 https_proxy=http://proxy.corp:3128"),
    ("Environment", '"A=1"x%4'),
    ("Environment", 'K=a"b c"d%4'),
    ("Environment", r"'B=two words%4' " + r'"C=\x41\s\t%4"'),
    ("Environment", r"D=e\=f"),
    ("Environment", r"X=a\ b"),
    ("Environment", r"V=\101\u00e9%4"),
    ("Environment", "W='it''s'%4"),
    ("Environment", r"Y=end\\%4"),
    ("Environment", "1X=y"),
    ("Environment", "G"),
    ("Environment", '"M=unterminated'),
    ("Environment", r"L=\q"),
    ("Environment", r"B=\xe9"),
    ("Environment", "NO_PROXY=.corp,10.0.0.0/8 Q=%n%-"),
    ("EnvironmentFile", "-/etc/mco/proxy.env"),
    ("EnvironmentFile", "relative.env"),
    ("EnvironmentFile", "/etc/%4/proxy.env"),
    ("EnvironmentFile", "/etc/%N/proxy.env"),
]


def model_warnings(path: str) -> tuple[list[str], dict[str, str], list[EnvironmentFileRef]]:
    warnings, env, files = Warnings(), {}, []  # type: ignore[var-annotated]
    for line, (key, value) in enumerate(CORPUS, start=2):
        if key == "Environment":
            environment_setting(value, DEMO, env, warnings, path, line)
        else:
            environment_file_setting(value, DEMO, files, warnings, path, line)
    return warnings.lines, env, files


def test_what_a_drop_in_sets_and_what_systemd_ignores() -> None:
    lines, env, files = model_warnings("/x.conf")
    assert "HTTP_PROXY" not in env  # p%40ss: an unknown specifier drops the word
    assert env["NO_PROXY"] == ".corp,10.0.0.0/8"  # the later assignment replaced "a b"
    assert env["http_proxy"] == "http://u:p%40ss@proxy:3128"
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://proxy.corp:3128"
    assert env["Q"] == "demo.service%-"
    assert "B" not in env  # a lone byte (\xe9) is not UTF-8
    assert files == [EnvironmentFileRef("/etc/mco/proxy.env", True), EnvironmentFileRef("/etc/demo/proxy.env", False)]
    assert "/x.conf:2: Failed to resolve specifiers in HTTP_PROXY=http://u:p%40ss@proxy:3128, ignoring: Invalid slot" in lines
    assert "/x.conf:8: Invalid syntax, ignoring: D=e\\=f" in lines


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="needs systemd-analyze (apt-get install systemd)")
def test_the_warnings_are_systemds_own(tmp_path: Path) -> None:
    units = tmp_path / "etc" / "systemd" / "system"
    (units / "demo.service.d").mkdir(parents=True)
    (units / "demo.service").write_text("[Unit]\nDescription=demo\n[Service]\nExecStart=/bin/true\n")
    drop_in = units / "demo.service.d" / "http-proxy.conf"
    drop_in.write_text("[Service]\n" + "".join(f"{key}={value}\n" for key, value in CORPUS))
    assert SYSTEMD_ANALYZE is not None
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", f"--root={tmp_path}", "demo.service"],
                          capture_output=True, text=True, errors="backslashreplace", timeout=120)
    real = [line for line in done.stderr.splitlines() if line.startswith(f"{drop_in}:")]
    modelled, _, _ = model_warnings(str(drop_in))
    # systemd writes a lone byte as it is; the model keeps it as a surrogate escape
    assert [m.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") for m in modelled] == real


def test_an_environment_file_is_read_as_systemd_reads_it() -> None:
    text = ("# MCO's proxy.env\n"
            "HTTP_PROXY=http://u:p%40ss@proxy:3128\n"
            "  HTTPS_PROXY = http://proxy:3128   \n"  # whitespace around the name and after the value
            "NO_PROXY='.corp, .svc'\n"
            'QUOTED="a \\"b\\" \\$c \\n"\n'
            "JOINED=one\\\ntwo\n"
            "; a comment ending in a backslash \\\n"
            "SWALLOWED=1\n"
            "noequals\n"
            "EMPTY=\n"
            "1BAD=x\n"
            "HTTP_PROXY=http://later:3128\n")
    pairs = [(name, value) for name, value, _ in parse_environment_file(text, "/etc/mco/proxy.env")]
    assert ("HTTP_PROXY", "http://u:p%40ss@proxy:3128") in pairs  # no specifiers in a file
    assert ("HTTPS_PROXY", "http://proxy:3128") in pairs
    assert ("NO_PROXY", ".corp, .svc") in pairs
    assert ("QUOTED", 'a "b" $c \\n') in pairs
    assert ("JOINED", "onetwo") in pairs
    assert not any(name == "SWALLOWED" for name, _ in pairs)  # systemd 252: the comment went on
    assert ("EMPTY", "") in pairs
    warnings = Warnings()
    env = load_environment_file(text, "/etc/mco/proxy.env", warnings)
    assert env["HTTP_PROXY"] == "http://later:3128" and "1BAD" not in env
    assert warnings.lines == ["Ignoring invalid environment assignment '1BAD=x': /etc/mco/proxy.env"]


def test_files_override_settings_and_a_missing_file_fails_the_start_unless_optional() -> None:
    settings = {"HTTP_PROXY": "http://old:3128", "KEEP": "1"}
    optional, required = EnvironmentFileRef("/etc/a.env", True), EnvironmentFileRef("/etc/b.env", False)
    env = service_environment(settings, [(optional, None), (required, "HTTP_PROXY=http://new:3128\n")], Warnings())
    assert env == {"HTTP_PROXY": "http://new:3128", "KEEP": "1"}
    with pytest.raises(EnvironmentFileError, match="Failed to load environment files: No such file or directory"):
        service_environment(settings, [(required, None)], Warnings())
    with pytest.raises(EnvironmentFileError, match="invalid UTF-8 value for key A"):
        load_environment_file("A=\udce9\n", "/etc/c.env", Warnings())


def test_an_empty_setting_resets_what_came_before() -> None:
    env: dict[str, str] = {}
    files: list[EnvironmentFileRef] = []
    warnings = Warnings()
    environment_setting("A=1", DEMO, env, warnings, "/x", 1)
    environment_setting("", DEMO, env, warnings, "/x", 2)
    environment_file_setting("/etc/a.env", DEMO, files, warnings, "/x", 3)
    environment_file_setting("", DEMO, files, warnings, "/x", 4)
    assert env == {} and files == [] and warnings.lines == []
