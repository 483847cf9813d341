"""A command on a simulated Linux node over real SSH, as its user, with a test's key."""

from __future__ import annotations

import asyncssh

from proxyfleet.simulators.linux.node import LinuxNode


async def run_on(node: LinuxNode, command: str, stdin: str = "", *, key: asyncssh.SSHKey) -> asyncssh.SSHCompletedProcess:
    """Run ``command`` (``stdin`` its whole input) on ``node``, its host key pinned; how it ended."""
    known = asyncssh.import_known_hosts(f"[{node.config.address}]:{node.port} {node.host_key_openssh}\n")
    async with asyncssh.connect(node.config.address, node.port, username=node.config.username, client_keys=[key],
                                known_hosts=known) as connection:
        return await connection.run(command, input=stdin, check=False)
