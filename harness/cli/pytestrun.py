"""pytest as the conformance scenarios run in it: only the plugins they need, and nothing the
calling environment would add.

The scenarios are a pytest session inside ``proxyfleet conformance``, and pytest reads more than
its arguments: every installed plugin's entry point is loaded (pytest-cov, pytest-timeout,
pytest-rerunfailures, pytest-randomly … whatever a CI image or a developer's environment holds),
``PYTEST_ADDOPTS`` adds options and ``PYTEST_PLUGINS`` adds plugins. A CI job that sets
``PYTEST_ADDOPTS=-x`` or ``--timeout=60`` for its unit tests would change the verdicts of a
conformance run in the same job (``--collect-only`` there made a run judge nothing). So the
session loads its three plugins by name, with entry-point autoloading off and both variables
unset — in this process and in the xdist workers it starts, which inherit the environment. It
also saves each worker from importing what it never uses (hypothesis' plugin alone: 0.66 s).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

import pytest

# What the scenarios need: asyncio tests and proxyfleet's own plugin; xdist when workers start.
SCENARIO_PLUGINS = ("pytest_asyncio.plugin", "proxyfleet.harness.conformance.plugin")
WORKERS_PLUGIN = "xdist.plugin"
AUTOLOAD_OFF = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
IGNORED = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")


@contextlib.contextmanager
def hermetic_environment() -> Iterator[None]:
    """Entry-point autoloading off and ``IGNORED`` unset while the session runs; the caller's
    environment is put back afterwards, whatever happened."""
    names = (AUTOLOAD_OFF, *IGNORED)
    saved = {name: os.environ.get(name) for name in names}
    for name in IGNORED:
        os.environ.pop(name, None)
    os.environ[AUTOLOAD_OFF] = "1"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def plugin_arguments(workers: bool) -> list[str]:
    """``-p`` for each plugin the session loads."""
    loaded = (*SCENARIO_PLUGINS, WORKERS_PLUGIN) if workers else SCENARIO_PLUGINS
    return [argument for plugin in loaded for argument in ("-p", plugin)]


def run_pytest(args: Sequence[str], plugins: Sequence[object], workers: bool = True) -> int:
    """``pytest.main`` with only the scenarios' plugins (and ``plugins``, objects of the caller's) loaded."""
    with hermetic_environment():
        return int(pytest.main([*plugin_arguments(workers), *args], plugins=list(plugins)))
