"""Node namespaces the tests mount, ended with each test (conftest's autouse fixture)."""

from __future__ import annotations

from proxyfleet.simulators.linux.nodemounts import NodeMounts

MOUNTED: list[NodeMounts] = []


def mounted(mounts: NodeMounts) -> NodeMounts:
    """Mount ``mounts``' namespace for the running test."""
    mounts.mount()
    MOUNTED.append(mounts)
    return mounts


def unmount_all() -> None:
    """End every namespace a test mounted."""
    while MOUNTED:
        MOUNTED.pop().unmount()
