"""xdist workers forked from the run's worker fork server run a pytest session as workers started by
xdist itself do; their labs share the run's mitmdump fork server; a forked worker is
``python -u -c CODE`` on the streams handed over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.core.forkserver import ForkServer
from proxyfleet.harness.cli import workerfork
from proxyfleet.harness.cli.pytestrun import hermetic_environment
from proxyfleet.simulators.proxy import forkserver as mitmdump_forks
from tests.support import HANG

PASSING = """
import os
from pathlib import Path

import pytest

@pytest.mark.parametrize("n", range(4))
def test_records_its_worker(n):
    Path(os.environ["RECORDS"], f"{n}").write_text(f"{os.getpid()} {os.getppid()} {os.environ['PYTEST_XDIST_WORKER']}")
"""


def test_python_arguments_are_those_execnet_gives_and_nothing_else() -> None:
    assert workerfork.python_arguments(["-u", "-c", "print(1)", "x"]) == (True, "print(1)", ["x"])
    assert workerfork.python_arguments(["-c", "pass"]) == (False, "pass", [])
    for wrong, said in ((["-c"], "Argument expected for the -c option"), (["-X", "dev", "-c", "pass"], "Unknown option: -X"),
                        (["-u"], "no -c given")):
        with pytest.raises(ValueError, match=said):
            workerfork.python_arguments(wrong)


def test_a_forked_worker_is_python_c_on_the_streams_handed_over(tmp_path: Path) -> None:
    server = ForkServer.start(workerfork.WHAT, ["proxyfleet.harness.cli.workerfork"], workerfork.DIRECTORY_PREFIX)
    try:
        code = ("import sys; line = sys.stdin.readline(); print(line.upper(), end=''); "
                "print(__name__, sys.argv, file=sys.stderr); sys.exit(3)")
        launcher = [sys.executable, "-I", "-m", "proxyfleet.core.forklaunch", server.handle(), workerfork.PROGRAM,
                    "pytest-worker", "-u", "-c", code, "an-argument"]
        done = subprocess.run(launcher, input=b"hello\nmore\n", capture_output=True, timeout=HANG, check=False)
        assert (done.returncode, done.stdout) == (3, b"HELLO\n")
        assert done.stderr == b"__main__ ['-c', 'an-argument']\n"  # a fresh __main__, argv as `python -c` gives it
        refused = subprocess.run([*launcher[:7], "-X", "dev"], capture_output=True, timeout=HANG, check=False)
        assert refused.returncode == 2 and b"Unknown option: -X" in refused.stderr
    finally:
        server.stop()


def test_a_session_runs_on_workers_forked_from_the_server_and_their_labs_share_one_mitmdump_server(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_passing=PASSING)
    records = tmp_path / "records"
    records.mkdir()
    os.environ["RECORDS"] = str(records)
    try:
        with hermetic_environment(), workerfork.forked_workers(2) as arguments:
            assert arguments[0] == "--tx" and arguments[1].startswith("2*popen//python=")
            shared = os.environ[mitmdump_forks.SHARED]
            session = pytester.runpytest_subprocess("-p", "xdist.plugin", *arguments, "--dist", "load",
                                                    "-p", "no:cacheprovider")
            # while it runs, a lab process of the run finds the run's mitmdump fork server
            attached = ForkServer.attach(mitmdump_forks.WHAT, shared)
            assert attached.running()
        assert mitmdump_forks.SHARED not in os.environ  # put back as it was
    finally:
        del os.environ["RECORDS"]
    session.assert_outcomes(passed=4)
    seen = [path.read_text().split() for path in records.iterdir()]
    workers = {worker for _, _, worker in seen}
    parents = {parent for _, parent, _ in seen}
    assert workers <= {"gw0", "gw1"} and len(seen) == 4
    # every worker a child of one process, the worker fork server (not of xdist's stand-ins)
    assert len(parents) == 1 and int(parents.pop()) != os.getpid()
    assert not attached.running()  # ended with the run
