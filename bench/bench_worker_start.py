"""Worker start-up benchmark: what a conformance run's xdist workers cost before their first
scenario — started by xdist as fresh interpreters (``-n``) or forked from the run's worker fork
server (``harness/cli/workerfork``), as ``proxyfleet conformance`` starts them.

Each worker's first test records when it began and the CPU its process had used by then, after
importing what a lab's first minute imports (the plugin is loaded by ``-p``; the Kubernetes APIs
the lab and the judge use). Forked, the server's own CPU (its one import of all that) is counted
once. The session runs the scenarios' plugins only, as ``pytestrun`` loads them.

    python bench/bench_worker_start.py --workers 5 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.harness.cli import workerfork
from proxyfleet.harness.cli.pytestrun import hermetic_environment, plugin_arguments
from proxyfleet.simulators.proxy import forkserver as mitmdump_forks

FIRST_TEST = """
import json, os, resource, time
from pathlib import Path

import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_first(n):
    import kubernetes.client
    kubernetes.client.CoreV1Api, kubernetes.client.CustomObjectsApi  # what a lab's first minute imports
    import proxyfleet.harness.lab  # noqa: F401
    record = Path(os.environ["RECORDS"], os.environ["PYTEST_XDIST_WORKER"])
    if not record.exists():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        record.write_text(json.dumps({{"at": time.monotonic(), "cpu": usage.ru_utime + usage.ru_stime}}))
"""


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_session(workers: int, forked: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "test_first.py").write_text(FIRST_TEST.format(tests=workers * 4))
        (root / "pytest.ini").write_text("[pytest]\n")
        records = root / "records"
        records.mkdir()
        env = {**os.environ, "RECORDS": str(records), workerfork.SWITCH: "1" if forked else "0"}
        os.environ.update(env)
        server_cpu = mitmdump_server_cpu = 0.0
        with hermetic_environment(), workerfork.forked_workers(workers) as arguments:
            started = time.monotonic()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   *plugin_arguments(True), *arguments, "--dist", "load", str(root)],
                                  cwd=root, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the session failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            if forked:  # read while the servers live: their one import of what every worker runs
                server_cpu = _server_cpu(arguments)
                mitmdumps = os.environ.get(mitmdump_forks.SHARED, "")
                mitmdump_server_cpu = _cpu_of(int(mitmdumps.split(":", 1)[0])) if mitmdumps else 0.0
        seen = [json.loads(p.read_text()) for p in records.iterdir()]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"workers": len(seen), "last_ready_s": round(max(s["at"] for s in seen) - started, 2),
            "workers_cpu_before_first_test_s": round(sum(s["cpu"] for s in seen), 2),
            "server_cpu_s": round(server_cpu, 2),
            # the run's one mitmdump fork server (fresh workers' labs each start their own: not here)
            "mitmdump_server_cpu_s": round(mitmdump_server_cpu, 2),
            "session_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2)}


def _server_cpu(arguments: list[str]) -> float:
    """The worker fork server's CPU so far (its pid is in the stand-in's handle)."""
    handle = arguments[1].split("forklaunch ", 1)[1].split()[0]
    return _cpu_of(int(handle.split(":", 1)[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for _ in range(options.rounds):
        for forked in (False, True):
            print(json.dumps({"forked": forked, **one_session(options.workers, forked)}), flush=True)


if __name__ == "__main__":
    main()
