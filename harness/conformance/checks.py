"""Check logic as pure functions of (expected, evidence), shared by the judge and its tests."""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.core.noproxy import redact_url


def env_text(environment: Mapping[str, str | None]) -> str:
    """``NAME='value'`` pairs for a report, credentials redacted."""
    return ", ".join(f"{k}={repr(redact_url(v)) if v is not None else 'unset'}" for k, v in environment.items())


def proxy_variables(environment: Mapping[str, str]) -> dict[str, str | None]:
    """The proxy variables of an environment block as Windows looks them up: names are
    case-insensitive, so a reconciler that writes ``http_proxy`` is as right as one that writes
    ``HTTP_PROXY``."""
    folded = {name.upper(): value for name, value in environment.items()}
    return {name: folded.get(name) for name in PROXY_VARIABLES}


def service_environment_problems(environments: Mapping[str, Mapping[str, str] | None],
                                 expected: Mapping[str, str | None]) -> list[str]:
    """Each egress service whose process environment (None: not running) lacks the expected
    proxy variables, described for a report."""
    problems = []
    for service, environment in environments.items():
        if environment is None:
            problems.append(f"{service} not running")
            continue
        seen = proxy_variables(environment)
        if seen != dict(expected):
            problems.append(f"{service}: {env_text(seen)}")
    return problems
