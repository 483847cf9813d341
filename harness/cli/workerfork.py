"""The xdist workers of a conformance run, started by fork (``core/forkserver``) instead of as
fresh interpreters — and one mitmdump fork server for the whole run instead of one per worker.

A worker imported pytest and its plugins, the Kubernetes client's APIs and models and the lab
(about 1.6 s of CPU) before its first scenario, and the fork server each worker started for its
labs' mitmdumps imported mitmproxy again (0.6 s): on two cores, five workers spent 10 s of CPU on
imports, and the first labs started 3 s late while they did. Here a run starts two fork servers:
one that has imported what a worker runs (``worker_preload``), from which every worker is forked,
and one that has imported mitmproxy, which every worker's labs use (``SHARED``).

xdist starts "a Python" per worker with execnet (``--tx popen//python=…``) and speaks its protocol
on that process's pipes. The Python it is given is ``core/forklaunch``, a stand-in that hands its
pipes to a worker forked from the server, forwards the signals it gets and exits as the worker did;
the worker (``run_worker``) becomes ``python -u -c CODE`` on them, running the code execnet sent as
a fresh ``__main__``, and exits through the interpreter's own shutdown. A worker sees the
environment xdist started its stand-in with; what a module read from the environment when it was
imported, it read in the fork server (the run's own environment, ``pytestrun.hermetic_environment``
already in force).
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
import traceback
import types
from collections.abc import Iterator

from proxyfleet.core import forkserver
from proxyfleet.core.forkserver import ForkServer, ProcessExit
from proxyfleet.harness.cli.pytestrun import SCENARIO_PLUGINS, WORKERS_PLUGIN
from proxyfleet.simulators.proxy import forkserver as mitmdump_forks

PROGRAM = "proxyfleet.harness.cli.workerfork:run_worker"
WHAT = "the xdist worker fork server"
DIRECTORY_PREFIX = "workerfork-"
SWITCH = "PROXYFLEET_WORKER_FORK"  # "0": fresh interpreters, as xdist starts them by default
# What a worker imports before its first scenario, beyond pytest's own plugins: the xdist side
# execnet runs, the Kubernetes APIs the lab and the judge use (with the models they import).
_WORKER_MODULES = ("execnet", WORKERS_PLUGIN, "xdist.remote", "xdist.newhooks", *SCENARIO_PLUGINS,
                   "kubernetes.client.api.core_v1_api", "kubernetes.client.api.custom_objects_api",
                   "proxyfleet.harness.cli.workerfork")


def enabled() -> bool:
    """Whether workers start by fork: where the fork server is supported, unless switched off."""
    return os.environ.get(SWITCH, "1") != "0" and forkserver.supported()


def worker_preload() -> list[str]:
    """Every module the worker fork server imports: pytest's default plugins as pytest loads them,
    then ``_WORKER_MODULES``."""
    from _pytest.config import default_plugins

    return ["pytest", *(f"_pytest.{name}" for name in default_plugins), *_WORKER_MODULES]


def run_worker(argv: list[str]) -> None:
    """The program a fork runs: ``python [-u] [-B] -c CODE [ARGUMENT ...]`` as execnet starts it —
    the code run as a fresh ``__main__`` on the standard streams handed over, then the
    interpreter's own exit (``ProcessExit``)."""
    try:
        unbuffered, code, rest = python_arguments(argv)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        raise ProcessExit(2) from None
    _standard_streams(unbuffered)
    sys.argv = ["-c", *rest]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)  # what `python -c` does
    except SystemExit as exc:
        raise ProcessExit(exc.code) from None
    except BaseException:  # as the interpreter reports an uncaught exception, then exit 1
        traceback.print_exc()
        raise ProcessExit(1) from None
    raise ProcessExit(0)


def python_arguments(argv: list[str]) -> tuple[bool, str, list[str]]:
    """(unbuffered, code, its arguments) of a Python command line of the form execnet gives;
    anything else is refused as Python refuses it."""
    unbuffered = False
    for index, argument in enumerate(argv):
        if argument == "-u":
            unbuffered = True
        elif argument == "-B":
            sys.dont_write_bytecode = True
        elif argument == "-c":
            if index + 1 >= len(argv):
                raise ValueError("Argument expected for the -c option")
            return unbuffered, argv[index + 1], argv[index + 2:]
        else:
            raise ValueError(f"Unknown option: {argument} (a forked worker runs only `-c CODE`)")
    raise ValueError("a forked worker runs `-c CODE`: no -c given")


def _standard_streams(unbuffered: bool) -> None:
    """stdout and stderr as the interpreter makes them on descriptors 1 and 2 (``-u``: unbuffered),
    for the streams handed over. stdin stays the server's own object on descriptor 0, now the
    handed-over pipe: it was never read through (the server reads its stdin with ``os.read``), so it
    holds nothing, and it is what `python -c` would have made of a pipe."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        raw = io.FileIO(fd, "w", closefd=False)
        stream = io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw), encoding=old.encoding,
                                  errors=old.errors, line_buffering=not unbuffered and raw.isatty(),
                                  write_through=unbuffered)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def tx_arguments(workers: int, server: ForkServer) -> list[str]:
    """xdist's options for ``workers`` workers forked from ``server`` (in place of ``-n``; as with
    ``--tx``, the tests are distributed only with a ``--dist`` mode given too)."""
    launcher = shlex.join([sys.executable, "-I", "-m", "proxyfleet.core.forklaunch", server.handle(), PROGRAM,
                           "pytest-worker"])
    return ["--tx", f"{workers}*popen//python={launcher}"]


@contextlib.contextmanager
def forked_workers(workers: int) -> Iterator[list[str]]:
    """While the session runs: the worker fork server and the run's mitmdump fork server, the
    latter handed to every worker's labs in the environment (``SHARED``); yields xdist's options
    (``tx_arguments``), or ``-n`` when workers cannot be forked here."""
    if not enabled():
        yield ["-n", str(workers)]
        return
    started: list[ForkServer] = []
    saved = os.environ.get(mitmdump_forks.SHARED)
    try:
        if mitmdump_forks.enabled():
            mitmdumps = mitmdump_forks.start_server()
            started.append(mitmdumps)
            os.environ[mitmdump_forks.SHARED] = mitmdumps.handle()
        server = ForkServer.start(WHAT, worker_preload(), DIRECTORY_PREFIX)
        started.append(server)
        yield tx_arguments(workers, server)
    finally:
        if saved is None:
            os.environ.pop(mitmdump_forks.SHARED, None)
        else:
            os.environ[mitmdump_forks.SHARED] = saved
        for server in reversed(started):
            server.stop()
