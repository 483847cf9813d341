"""Every node namespace a test mounted ends with the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.simulators.linux.namespaces import unmount_all


@pytest.fixture(autouse=True)
def _unmount_after_each_test() -> Iterator[None]:
    yield
    unmount_all()
