"""Running the ``proxyfleet`` command as a user would, and finding what it left running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PROXY = """apiVersion: config.openshift.io/v1
kind: Proxy
metadata:
  name: cluster
spec:
  httpProxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080
  httpsProxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080
  noProxy: .acme.example,registry.corp.internal
  readinessEndpoints:
  - https://www.acme.example
  trustedCA:
    name: user-ca-bundle
"""



def proxyfleet(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proxyfleet.harness", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def is_mitmdump(pid: int) -> bool:
    """Whether ``pid`` runs mitmdump: named so (``comm``: the lab forks it from its fork server,
    whose command line it keeps) or started as a program of its own (its command line says so)."""
    try:
        proc = Path(f"/proc/{pid}")
        return (proc / "comm").read_text().strip() == "mitmdump" or b"mitmdump" in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def mitmdumps(parent: int | None = None) -> set[int]:
    """mitmdump processes (only those ``parent`` started, if given — itself or through its fork
    server: xdist runs other labs alongside)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not is_mitmdump(pid := int(entry.name)):
            continue
        up = _parent(pid)
        if parent is None or up == parent or (up is not None and _parent(up) == parent):
            found.add(pid)
    return found


def marked_processes(marker: str) -> dict[int, str]:
    """Processes (pid -> command line) whose environment carries ``marker``, this one excepted."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone, or not ours to read
    return found


def wait_for_line(process: subprocess.Popen[str], text: str, within: float) -> str:
    """What ``process`` wrote to stderr up to the first line containing ``text``; fails (with
    what it said) if it never says it — ``within`` only turns a silent hang into a failure."""
    assert process.stderr is not None
    deadline = time.monotonic() + within
    seen = ""
    for line in process.stderr:
        seen += line
        if text in line or time.monotonic() > deadline:
            break
    assert text in seen, f"never said {text!r}: {seen[-2000:]}"
    return seen
