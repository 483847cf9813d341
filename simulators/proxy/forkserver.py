"""Start the lab's mitmdump by forking a process that has already imported mitmproxy
(``core/forkserver``).

A mitmdump start cost about half a second of CPU, most of it importing mitmproxy: in a 10-node run
of every scenario, 29 mitmdump processes took 22 s of the run's 108 s of CPU. Here a fork server
imports it once, and each start is a fork of that server calling the same entry point
(``mitmproxy.tools.main.mitmdump``) with the same arguments: the same program, started in a
fraction of the time.

One fork server serves each lab process, started on its first mitmdump — or, where a conformance
run hands its workers one (``SHARED``: the handle of a server the run started), every lab process
of the run uses that one, so mitmproxy is imported once per run rather than once per worker.

The forked mitmdump's command line (``/proc/PID/cmdline``) is the fork server's, with no
arguments (its name, ``comm``, is ``mitmdump``). ``PROXYFLEET_MITMDUMP_FORK=0`` starts every
mitmdump as a fresh interpreter instead (what the A/B measurement in the README compares).
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable
from pathlib import Path

from proxyfleet.core import forkserver
from proxyfleet.core.forkserver import ForkedProcess, ForkServer, ForkServerError
from proxyfleet.simulators.proxy.cakey import use_for_mitmproxy

__all__ = ["FRESH", "PRELOAD", "SHARED", "SWITCH", "ForkServer", "ForkServerError", "ForkedProcess", "enabled",
           "run_mitmdump", "spawn", "start_server"]

# What mitmdump and the lab's addon import: loaded once, in the fork server.
PRELOAD = ("mitmproxy.tools.main", "mitmproxy.tools.dump", "mitmproxy.tools.cmdline", "mitmproxy.addons",
           "mitmproxy.addons.script", "proxyfleet.core.looplag", "proxyfleet.simulators.network",
           "proxyfleet.simulators.proxy.authentication", "proxyfleet.simulators.proxy.guards",
           "proxyfleet.simulators.proxy.cakey", "proxyfleet.simulators.proxy.forkserver")
PROGRAM = "proxyfleet.simulators.proxy.forkserver:run_mitmdump"
WHAT = "the mitmdump fork server"
SWITCH = "PROXYFLEET_MITMDUMP_FORK"  # "0": a fresh interpreter for every mitmdump
SHARED = "PROXYFLEET_MITMDUMP_FORK_SERVER"  # the handle of a run's own server, for its lab processes
DIRECTORY_PREFIX = "mitmfork-"


def enabled() -> bool:
    """Whether mitmdump starts by fork: where the fork server is supported, unless switched off."""
    return os.environ.get(SWITCH, "1") != "0" and forkserver.supported()


def run_mitmdump(arguments: list[str]) -> None:
    """The lab's mitmdump: ``mitmdump ARGUMENTS`` as ``python -c …`` would run it, reading the CA
    key the lab made without the RSA check (``cakey``). A fork runs it, and so does a fresh
    interpreter (``FRESH``)."""
    sys.argv = ["-c", *arguments]  # mitmdump's messages name it so
    from mitmproxy.tools.main import mitmdump

    use_for_mitmproxy()
    mitmdump(arguments)


# ``python -c FRESH ARGUMENTS``: the same program in a fresh interpreter (``SWITCH`` off).
FRESH = "import sys; from proxyfleet.simulators.proxy.forkserver import run_mitmdump; run_mitmdump(sys.argv[1:])"


def start_server() -> ForkServer:
    """A new mitmdump fork server, this process's to stop."""
    return ForkServer.start(WHAT, PRELOAD, DIRECTORY_PREFIX)


_SERVER: ForkServer | None = None


def _server() -> ForkServer:
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        if _SERVER is not None:
            _SERVER.stop()  # only one this process started
        shared = os.environ.get(SHARED)
        _SERVER = ForkServer.attach(WHAT, shared) if shared else start_server()
    return _SERVER


@atexit.register
def _stop_server() -> None:
    if _SERVER is not None:
        _SERVER.stop()


async def spawn(arguments: list[str], output: Path, startup_limit: float,
                stalled: Callable[[float], float] = lambda since: 0.0) -> ForkedProcess:
    """``mitmdump ARGUMENTS`` started by this process's fork server (started on first use, and
    again if it has ended; or the run's, ``SHARED``), its output appended to ``output``."""
    return await _server().spawn(PROGRAM, arguments, output, startup_limit, stalled, name="mitmdump")
