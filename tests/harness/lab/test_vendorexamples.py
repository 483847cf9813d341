"""The vendor examples proxyfleet ships: each one's files are where an installed proxyfleet finds
them, its command names a file it has, and copying never overwrites a file already there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proxyfleet.harness.lab.vendorexamples import EXAMPLES, copy_example, examples_directory


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_has_the_files_its_command_and_config_name(name: str) -> None:
    example = EXAMPLES[name]
    directory = examples_directory() / example.directory
    files = {p.name for p in directory.iterdir()}
    named = set(re.findall(r"\{config_dir\}/([\w.-]+)", example.command.format(program=example.program)))
    assert named and named <= files, (named, files)
    assert not example.config or example.config in files
    # the example's own header gives the same command line
    header = (directory / (example.config or sorted(named)[0])).read_text()
    assert example.command.format(program=example.program).split(" ", 1)[1].split("{config_dir}/")[0].strip() \
        in header


def test_copying_never_overwrites_a_file_already_there(tmp_path: Path) -> None:
    example = EXAMPLES["squid"]
    written = copy_example(example, tmp_path / "squid")
    assert {p.name for p in written} >= {"squid.conf", "squid-ssl-bump.conf"}
    with pytest.raises(FileExistsError):
        copy_example(example, tmp_path / "squid")


def test_a_program_not_installed_is_named_by_its_debian_path() -> None:
    assert EXAMPLES["squid"].program_path().endswith("/squid")
    missing = EXAMPLES["squid"].__class__("x", "squid", "no-such-package", "no-such-proxy", "{program}", "", "nobody")
    assert missing.program_path() == "/usr/sbin/no-such-proxy" and not missing.installed()
