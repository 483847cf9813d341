"""The top-level command: subcommands load on use, and its help needs none of them."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

from proxyfleet.harness.cli import COMMANDS, main
from tests.support import HANG

HEAVY = ("kubernetes", "asyncssh", "mitmproxy", "aiohttp", "cryptography")

PROBE = """
import json, sys
from proxyfleet.harness.cli import main
try:
    main(sys.argv[1:], prog_name="proxyfleet")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.stderr)
"""


def loaded_by(*argv: str) -> tuple[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv],
                          capture_output=True, text=True, timeout=60, check=False)
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    command = getattr(importlib.import_module(COMMANDS[name][0]), name)
    assert isinstance(command, click.Command)
    assert COMMANDS[name][1] == command.get_short_help_str(limit=300)
    assert main.get_command(click.Context(main), name) is command


def test_help_lists_every_command_without_importing_the_lab() -> None:
    shown, loaded = loaded_by("--help")
    for name, (_, help_text) in COMMANDS.items():
        assert name in shown and help_text[:40] in shown
    assert loaded == []


def test_noproxy_explain_needs_no_lab_library() -> None:
    shown, loaded = loaded_by("noproxy", "explain", "--client", "go", "--env", "HTTPS_PROXY=http://p:3128",
                              "https://quay.io/")
    assert "proxy" in shown
    assert loaded == []


def test_an_unknown_command_is_refused() -> None:
    done = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "nope"], capture_output=True, text=True,
                          timeout=HANG, check=False)
    assert done.returncode == 2 and "No such command 'nope'" in done.stderr


def test_small_labs_overlap_and_big_ones_do_not() -> None:
    from proxyfleet.harness.cli.conformance import default_workers
    assert default_workers(10, 2) == 8  # waiting for reboots overlaps well
    assert default_workers(20, 2) == 4  # ~40 simulated nodes in flight per CPU
    assert default_workers(100, 2) == 2  # CPU-bound: more labs only stretch each rollout
    assert default_workers(1, 1) == 4 and default_workers(100, 8) == 8
