"""A fleet-scale run raises its open-file limit as far as the hard limit allows."""

from __future__ import annotations

import resource

from proxyfleet.core.process_limits import raise_open_file_limit


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        raised = raise_open_file_limit()
        assert raised == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert raised == hard or hard == resource.RLIM_INFINITY
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
