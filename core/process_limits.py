"""Process-wide limits a fleet-scale run needs."""

from __future__ import annotations

import resource


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard limit and return it.

    Each node costs a listening socket and an SSH connection on both ends (and the reconciler
    keeps one connection per node), so 1,000 nodes overrun the common soft limit of 1,024.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # keep what we have; running out of descriptors will then say so
    return soft
