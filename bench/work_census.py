"""Where a conformance run's work goes, counted: every SSH exec request the simulated Windows nodes
served (by what it was: the judge's probe, the reconciler's observation, a boot-time read, …) and
every request the lab's API server served (by verb, resource and client) — the units the run's CPU
is spent on, to say which of them a cut would have to remove.

    python bench/work_census.py [--nodes 10] [--json out.json] [-- more conformance options]

Runs ``proxyfleet conformance`` once with a ``sitecustomize`` on ``PYTHONPATH`` that wraps the
Windows node's session handler and the API server's request handler in every process of the run
(the workers are forked from a server that imported it), each appending one line per request to a
file of its own; the counts are read once the run is over (that ``sitecustomize`` shadows any
other for the run). What it does not count: SFTP transfers, Linux nodes' commands, mitmdump's flows
(the JSON report's ``flows`` has those).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.core.nodessh import BOOT_SCRIPT, REBOOT_SCRIPT
from proxyfleet.harness.conformance.probe import probe_script
from proxyfleet.harness.reconciler.scripts import observe_script, verify_script
from proxyfleet.simulators.windows.commandline import UsageError, parse_powershell_arguments, split_command_line

# Installed in every Python process of the run: one line per served request, to <dir>/<pid>.log.
SITECUSTOMIZE = textwrap.dedent('''
    import os, json
    _DIRECTORY = os.environ["PROXYFLEET_CENSUS_DIR"]

    def _record(kind, *fields):
        with open(os.path.join(_DIRECTORY, f"{os.getpid()}.log"), "a", encoding="utf-8") as out:
            out.write(json.dumps([kind, *fields]) + "\\n")

    try:
        from proxyfleet.simulators.windows import node as _node
        from proxyfleet.simulators.controlplane import server as _server
    except ImportError:  # a process of the run that has no proxyfleet (none today)
        pass
    else:
        _handle_process = _node.WindowsNode._handle_process
        async def _counted_process(self, process):
            if process.command is not None:
                _record("ssh", process.command)
            return await _handle_process(self, process)
        _node.WindowsNode._handle_process = _counted_process

        _handle = _server.APIServer.handle
        async def _counted_request(self, request):
            _record("api", request.method, request.path, bool(request.query.get("watch")),
                    request.headers.get("User-Agent", ""))
            return await _handle(self, request)
        _server.APIServer.handle = _counted_request
''')

_NAMED = re.compile(r"/(nodes|leases|pods|configmaps|events|secrets|proxies|[a-z]+configs|machines)/[^/]+")
# The fixed scripts, by their text (built once: a run serves thousands of them).
_KNOWN = {probe_script(): "judge: probe of the node", observe_script(): "reconciler: observation",
          verify_script(): "reconciler: verification after a reboot", BOOT_SCRIPT: "boot time read",
          REBOOT_SCRIPT: "Restart-Computer"}


def script_of(command: str) -> str:
    """The PowerShell a ``powershell.exe …`` command line runs, read as the simulated node reads
    its arguments (``-EncodedCommand`` decoded, ``-enc`` and the other short forms too); any other
    line is itself."""
    args = split_command_line(command)
    if not args or args[0].lower().rsplit("\\", 1)[-1] not in ("powershell", "powershell.exe"):
        return command
    try:
        return parse_powershell_arguments(args[1:]).command or command
    except UsageError:
        return command


def command_kind(command: str) -> str:
    """What an exec request was, by its script: the known fixed ones by their text, the rest by
    the program or first statement they run."""
    script = script_of(command)
    if script in _KNOWN:
        return _KNOWN[script]
    for needle, kind in (("'curl.exe'", "egress check: curl.exe"), ("'crictl.exe'", "egress check: crictl pull"),
                         (".WaitForStatus('Running'", "reconciler: verification after a reboot"),
                         ("$dataPath", "a script with a data file (SFTP)")):
        if needle in script:
            return kind
    lines = [line.strip() for line in script.splitlines()
             if line.strip() and line.strip() != "$ErrorActionPreference = 'Stop'"]
    return "other: " + (lines[0][:60] if lines else "")


def api_kind(method: str, path: str, watch: bool, agent: str) -> str:
    """``VERB /path/with/names/as/X [watch] (client)``; the client by its User-Agent's product."""
    path = re.sub(r"/namespaces/[^/]+", "/namespaces/NS", path)
    path = _NAMED.sub(lambda m: f"/{m.group(1)}/X", path)
    client = agent.split("/", 1)[0] or "?"
    client = "official client" if client == "OpenAPI-Generator" else client
    return f"{method} {path}{' watch' if watch else ''} ({client})"


def census(directory: Path) -> dict[str, Any]:
    """The counts of every process's log under ``directory``: totals, and each kind's, most first."""
    commands: collections.Counter[str] = collections.Counter()
    requests: collections.Counter[str] = collections.Counter()
    for log in directory.glob("*.log"):
        for line in log.read_text(encoding="utf-8").splitlines():
            kind, *fields = json.loads(line)
            if kind == "ssh":
                commands[command_kind(fields[0])] += 1
            else:
                requests[api_kind(*fields)] += 1
    return {"ssh_commands": sum(commands.values()), "ssh_by_kind": dict(commands.most_common()),
            "api_requests": sum(requests.values()), "api_by_kind": dict(requests.most_common())}


def main() -> None:
    """Run the main job once, counted; print the tables (and write them with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the counts here")
    parser.add_argument("--top", type=int, default=20, help="rows per table")
    parser.add_argument("extra", nargs="*", help="more conformance options (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="proxyfleet-census-") as directory:
        site, logs = Path(directory, "site"), Path(directory, "logs")
        site.mkdir()
        logs.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        environment = {**os.environ, "PROXYFLEET_CENSUS_DIR": str(logs),
                       "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--nodes", str(args.nodes),
                               *args.extra], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, check=False)
        wall = time.monotonic() - started
        if not any(logs.glob("*.log")):
            sys.exit(f"nothing was counted (the sitecustomize did not load?); exit {done.returncode}:\n"
                     + done.stderr[-2000:])
        counts = {"nodes": args.nodes, "exit": done.returncode, "wall_s": round(wall, 1), **census(logs)}
    print(f"exit {counts['exit']}, {counts['wall_s']} s; {counts['ssh_commands']} SSH exec requests, "
          f"{counts['api_requests']} API requests")
    for table in ("ssh_by_kind", "api_by_kind"):
        print(f"\n{table}:")
        for kind, count in list(counts[table].items())[:args.top]:
            print(f"  {count:7d}  {kind}")
    if args.json is not None:
        args.json.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    sys.exit(0 if done.returncode == 0 else 1)


if __name__ == "__main__":
    main()
