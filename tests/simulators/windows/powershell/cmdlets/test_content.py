"""Get-Content, Set-Content and Get-FileHash as Windows PowerShell 5.1 reads and writes files."""

from __future__ import annotations

import hashlib

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_files_content_and_hash(machine: WindowsMachine) -> None:
    await ps(machine, "Set-Content -Path C:\\k\\a.txt -Value 'one','two'")
    assert machine.filesystem.read_bytes("C:\\k\\a.txt") == b"one\r\ntwo\r\n"
    lines = await ps(machine, "(Get-Content C:\\k\\a.txt).Count; Get-Content C:\\k\\A.TXT -Raw")
    assert lines.stdout.replace("\r\n", "\n").startswith("2\none\ntwo\n")
    digest = hashlib.sha256(b"one\r\ntwo\r\n").hexdigest().upper()
    hashed = await ps(machine, "(Get-FileHash C:\\k\\a.txt).Hash")
    assert hashed.stdout.strip() == digest
    await ps(machine, "Set-Content C:\\k\\u.txt -Value 'é' -Encoding UTF8")
    assert machine.filesystem.read_bytes("C:\\k\\u.txt") == b"\xef\xbb\xbf\xc3\xa9\r\n"  # 5.1 writes a BOM
    assert (await ps(machine, "Test-Path C:\\k\\a.txt -PathType Leaf")).stdout.strip() == "True"
    await ps(machine, "Remove-Item C:\\k\\a.txt")
    assert not machine.filesystem.exists("C:\\k\\a.txt")
    gone = await ps(machine, "Get-Content C:\\k\\a.txt")
    assert "Cannot find path 'C:\\k\\a.txt' because it does not exist." in gone.stderr
