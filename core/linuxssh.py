"""Talking to one Linux node over SSH: POSIX shell commands (data on stdin, never on a command
line: sshd hands the command to the user's shell as its argument, which every local user of the
node can read in ``ps``), the boot id, a reboot.

The connection itself — host-key pinning, reuse, timeouts — is ``nodessh.NodeConnection``'s.
"""

from __future__ import annotations

import contextlib
from typing import Any

from proxyfleet.core.nodessh import NodeConnection, ScriptFailed, Unreachable
from proxyfleet.core.noproxy import redact_text

BOOT_COMMAND = "cat /proc/sys/kernel/random/boot_id"
REBOOT_COMMAND = "sudo -n systemctl reboot"


def stderr_summary(stderr: str) -> str:
    """What a failed command said, credentials redacted, bounded."""
    return redact_text(" ".join(line.strip() for line in stderr.splitlines() if line.strip()))[:1000]


class LinuxNodeConnection(NodeConnection):
    """One SSH connection to a Linux node (its user may ``sudo`` without a password, as RHCOS'
    ``core`` and CAPI images' users may)."""

    async def shell(self, command: str, limit: float = 60.0, input: str | None = None) -> str:
        """Run ``command`` (one round trip), ``input`` its stdin; its stdout, or ScriptFailed
        saying how it ended."""
        result = await self.run(command, limit, input)
        if result.exit_status != 0:
            raise ScriptFailed(f"sh on {self.target.address} exited {result.exit_status}: "
                               f"{stderr_summary(str(result.stderr or ''))}")
        return str(result.stdout or "")

    async def script(self, script: str, limit: float = 60.0, data: Any = None) -> Any:
        raise TypeError("a Linux node runs POSIX shell, not PowerShell: use shell()")

    async def boot_time(self) -> str:
        """The node's boot id: a new one after every boot (what tells a reboot happened)."""
        return (await self.shell(BOOT_COMMAND, limit=30)).strip().replace("-", "")

    async def request_reboot(self) -> bool:
        """``systemctl reboot``; whether an exit status came back (the session may be cut first:
        only a new boot id tells whether it happened)."""
        confirmed = False
        with contextlib.suppress(Unreachable):
            result = await self.run(REBOOT_COMMAND, limit=30)
            if result.exit_status not in (0, None):
                raise ScriptFailed(f"systemctl reboot failed: {stderr_summary(str(result.stderr or ''))}")
            confirmed = result.exit_status == 0
        await self.close()
        return confirmed
