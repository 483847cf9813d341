"""Process-wide limits and settings a fleet-scale run needs."""

from __future__ import annotations

import gc
import resource

# The lab makes and drops a great many short-lived objects (SSH packets, API requests, egress
# records) beside a large long-lived heap (node models, the store, ~150-certificate bundles). With
# CPython's default young generation (700 allocations) enough of the short-lived ones outlive two
# young collections to trigger a full one — a scan of the whole heap with the loop stopped — again
# and again: a 100-node change workflow ran 48 of them (14.5 s of its 208 s of CPU, up to 0.48 s
# each, and a pause grows with the heap). With 10,000: 2 full collections, 6.7 s of GC in all (21.7 s before).
YOUNG_GENERATION = 10_000


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


def collect_garbage_less_often() -> tuple[int, int, int]:
    """Raise the collector's young-generation threshold to ``YOUNG_GENERATION`` (one set higher
    is kept; the older generations' are left as they are); the thresholds it had."""
    before = gc.get_threshold()
    if before[0] < YOUNG_GENERATION:
        gc.set_threshold(YOUNG_GENERATION, before[1], before[2])
    return before
