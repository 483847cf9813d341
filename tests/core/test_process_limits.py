"""A fleet-scale run raises its open-file limit as far as the hard limit allows, and collects
garbage less often than CPython's default."""

from __future__ import annotations

import gc
import resource

from proxyfleet.core.process_limits import YOUNG_GENERATION, collect_garbage_less_often, raise_open_file_limit


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        raised = raise_open_file_limit()
        assert raised == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert raised == hard or hard == resource.RLIM_INFINITY
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_young_generation_is_collected_less_often_never_more() -> None:
    kept = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's default
        assert collect_garbage_less_often() == (700, 10, 10)
        assert gc.get_threshold() == (YOUNG_GENERATION, 10, 10)
        gc.set_threshold(50_000, 5, 7)  # someone asked for rarer still: kept
        assert collect_garbage_less_often() == (50_000, 5, 7)
        assert gc.get_threshold() == (50_000, 5, 7)
    finally:
        gc.set_threshold(*kept)
