"""Fixtures of the core tests: a fork server that has preloaded the test programs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proxyfleet.core.forkserver import ForkServer

PROGRAMS = "tests.core.forkprograms"


@pytest.fixture
def server() -> Iterator[ForkServer]:
    """A fork server of this test's own, with ``tests.core.forkprograms`` imported."""
    started = ForkServer.start("the test fork server", [PROGRAMS], "testfork-")
    try:
        yield started
    finally:
        started.stop()
