"""``proxyfleet hosts``: the well-known block's hosts file and egress address, as a lab started
with ``--proxy-url`` will really use them."""

import stat
from pathlib import Path

from click.testing import CliRunner

from proxyfleet.harness.cli.hosts import hosts
from proxyfleet.harness.lab.assembly import WELL_KNOWN_LAB_INDEX, well_known_plan


def test_the_plan_names_every_origin_in_the_well_known_block() -> None:
    text, egress = well_known_plan()
    lines = text.splitlines()
    assert f"127.30.{WELL_KNOWN_LAB_INDEX}.1 quay.io" in lines
    assert f"127.40.{WELL_KNOWN_LAB_INDEX}.1 registry.corp.internal" in lines
    assert f"127.30.{WELL_KNOWN_LAB_INDEX}.3 ctldl.windowsupdate.com" in lines
    assert egress == f"127.20.{WELL_KNOWN_LAB_INDEX}.2"


def test_hosts_prints_or_writes_the_plan(tmp_path: Path) -> None:
    text, egress = well_known_plan()
    printed = CliRunner().invoke(hosts, [])
    assert printed.exit_code == 0 and text in printed.output and f"leave from {egress}" in printed.output
    target = tmp_path / "hosts"
    written = CliRunner().invoke(hosts, ["--write", str(target)])
    assert written.exit_code == 0 and target.read_text() == text
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
