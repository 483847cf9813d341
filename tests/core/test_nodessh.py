"""Node access: command lines that fit any default shell, data off the command line, error
messages without script text, and asyncssh's command logging silenced explicitly."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys

import asyncssh
import pytest

from proxyfleet.core.nodessh import (
    MAX_COMMAND,
    NodeAddress,
    NodeConnection,
    Unreachable,
    data_prologue,
    encoded_command,
    error_summary,
)


def test_scripts_run_through_powershell_and_fit_cmds_limit() -> None:
    command = encoded_command("Get-Date")
    assert command.startswith("powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand ")
    assert base64.b64decode(command.rsplit(" ", 1)[1]).decode("utf-16-le") == "Get-Date"
    with pytest.raises(ValueError, match="ship its data as a file"):
        encoded_command("x" * (MAX_COMMAND // 2))


def test_the_data_prologue_names_only_the_file() -> None:
    prologue = data_prologue("0123abcd.json")
    assert "0123abcd.json" in prologue and "Remove-Item" in prologue  # read, then deleted


def test_error_summaries_drop_the_script_echo() -> None:
    stderr = ("Import-Certificate : The system cannot find the file specified.\r\n"
              "At line:14 char:3\r\n"
              "+   $null = Import-Certificate -FilePath ('C:\\k\\certs\\' + $thumbprint + '.crt') ...\r\n"
              "+   ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n"
              "    + CategoryInfo          : ObjectNotFound: (:) [Import-Certificate], FileNotFoundException\r\n"
              "    + FullyQualifiedErrorId : System.IO.FileNotFoundException\r\n")
    summary = error_summary(stderr)
    assert summary.startswith("Import-Certificate : The system cannot find the file specified.")
    assert "FullyQualifiedErrorId : System.IO.FileNotFoundException" in summary
    assert "$thumbprint" not in summary and "At line" not in summary and "~~~" not in summary


def test_importing_the_reconciler_leaves_logging_alone() -> None:
    # No import side effects: the reconciler silences asyncssh itself when it starts.
    level = subprocess.run([sys.executable, "-c", "import logging, proxyfleet.harness.reconciler, proxyfleet.simulators.fleet; "
                                                  "print(logging.getLogger('asyncssh').level)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert level == "0"


async def test_an_sshd_that_never_answers_is_unreachable_saying_how_long_was_waited() -> None:
    # A TimeoutError's own text is empty: the report said "cannot reach …:24146 over SSH:" and nothing.
    held: list[asyncio.StreamWriter] = []  # kept: a collected writer would close the connection
    silent = await asyncio.start_server(lambda reader, writer: held.append(writer), "127.0.0.1", 0)  # never speaks
    port = silent.sockets[0].getsockname()[1]
    key = asyncssh.generate_private_key("ssh-ed25519")
    try:
        connection = NodeConnection(NodeAddress("127.0.0.1", port, "Administrator"), key, None, connect_timeout=0.2)
        with pytest.raises(Unreachable) as raised:
            await connection.connect()
    finally:
        for writer in held:
            writer.close()
        silent.close()
    assert str(raised.value) == f"cannot reach 127.0.0.1:{port} over SSH: no answer within 0.2 s"
