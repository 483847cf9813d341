"""The README's hand-composed walk-through, run line by line: ``proxyfleet cluster``, ``proxyfleet
fleet``, kubectl creating the Secret and ConfigMap, ``proxyfleet reconcile``, a proxy with a CA,
``proxyfleet rollout status`` and an OpenSSH check. Long-running commands (the ``proxyfleet`` servers and lines
ending in ``&``) start in the background; every other line must exit 0."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import sys
from pathlib import Path

import pytest

from tests.support import HANG, wait_until

README = Path(__file__).parents[3] / "README.md"
LONG_RUNNING = ("proxyfleet cluster", "proxyfleet fleet", "proxyfleet reconcile")
README_PORT = "2222"


def walkthrough_lines() -> list[str]:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", text, re.S)
    assert block, "README has no walkthrough block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def free_port() -> int:
    """A port free on the first node address (the README's 2222 may be taken on a shared machine)."""
    with socket.socket() as probe:
        probe.bind(("127.10.0.1", 0))
        return int(probe.getsockname()[1])


class Terminal:
    """Runs lines as a user's shell would, in one working directory with accumulated exports."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        bin_dir = str(Path(sys.executable).parent)
        self.env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        self.background: list[tuple[str, asyncio.subprocess.Process, list[str]]] = []

    async def export(self, line: str) -> None:
        name = line.split()[1].split("=", 1)[0]
        out = await self.run(f'{line}; printf %s "${name}"')
        self.env[name] = out

    async def run(self, line: str) -> str:
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", line, cwd=self.cwd, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 330)
        assert process.returncode == 0, f"{line}\nexit {process.returncode}\n{out.decode()}\n{err.decode()}"
        return out.decode()

    async def start(self, line: str) -> None:
        """Start a server in its own session; return once it has said anything (it is up)."""
        command = line.removesuffix("&").strip()
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", f"exec {command}", cwd=self.cwd, env=self.env, start_new_session=True,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        said: list[str] = []
        self.background.append((command, process, said))

        async def collect(stream: asyncio.StreamReader | None) -> None:
            assert stream is not None
            async for raw in stream:
                said.append(raw.decode())

        for stream in (process.stdout, process.stderr):
            asyncio.get_running_loop().create_task(collect(stream))
        await wait_until(lambda: bool(said) or process.returncode is not None, what=command)
        assert process.returncode is None, f"{command} exited {process.returncode}: {''.join(said)}"

    async def stop(self) -> list[tuple[str, int | None, str]]:
        for _, process, _ in reversed(self.background):
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGTERM)
        results = []
        for command, process, said in reversed(self.background):
            try:
                await asyncio.wait_for(process.wait(), HANG)
            except TimeoutError:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
            results.append((command, process.returncode, "".join(said)))
        return results


@pytest.mark.skipif(not all(shutil.which(p) for p in ("kubectl", "ssh", "openssl")),
                    reason="needs kubectl, OpenSSH's ssh and openssl")
@pytest.mark.slow
async def test_the_readme_walkthrough(tmp_path: Path) -> None:
    port = str(free_port())
    terminal = Terminal(tmp_path)
    outputs: list[str] = []
    try:
        for line in walkthrough_lines():
            line = re.sub(rf"(--port|--ssh-port|-p) {README_PORT}\b", rf"\g<1> {port}", line)
            if line.startswith("export "):
                await terminal.export(line)
            elif line.startswith(LONG_RUNNING) or line.endswith("&"):
                await terminal.start(line)
            else:
                outputs.append(await terminal.run(line))
    finally:
        stopped = await terminal.stop()
    # the last line: the machine variable as a real OpenSSH client reads it from the node
    assert outputs[-1].strip() == "http://proxy.corp.internal:3128"
    nodes_table = outputs[-2]
    assert nodes_table.count("configured") == 3, nodes_table
    for command, returncode, said in stopped:
        assert returncode == 0, f"{command} exited {returncode}: {said}"
