"""``proxyfleet rollout status``: wait, like ``kubectl rollout status``, until every Windows instance
has applied the cluster's current proxy settings and trusted CA bundle.

The current revision (``core.rollout``) is read from the cluster on every look, so a change that
lands while waiting is waited for too. Nothing is inferred from a state label alone: a node counts
only when its ``proxyfleet.io/applied`` annotation names the current revision, which the
reconciler writes after verifying the node.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from proxyfleet.core.contract import OPERATOR_NAMESPACE
from proxyfleet.core.kubeconfig import KubeconfigError, api_client
from proxyfleet.core.rollout import Assessment, assess, read_snapshot

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float:
    """Seconds in a Go/kubectl duration (``90s``, ``5m``, ``1h30m``) or a plain number of seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r} (use e.g. 90s, 5m, 1h30m)")
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def _describe(found: Assessment) -> str:
    if found.revision is None:
        return f"waiting for {found.waiting_for}"
    total = len(found.done) + len(found.pending) + len(found.failed)
    line = f"{len(found.done)} of {total} instance(s) applied revision {found.revision}"
    if found.pending:
        line += "; waiting for " + ", ".join(found.pending[:5]) + (" …" if len(found.pending) > 5 else "")
    return line


@click.group()
def rollout() -> None:
    """Follow the rollout of the cluster's proxy settings to the Windows instances."""


@rollout.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--namespace", default=OPERATOR_NAMESPACE, show_default=True,
              help="Where windows-instances and trusted-ca live.")
@click.option("--timeout", "timeout_text", default="10m", show_default=True,
              help="Give up after this long (90s, 5m, 1h30m); exit 1.")
@click.option("--poll-seconds", default=1.0, show_default=True, type=click.FloatRange(0.05, 60))
def status(kubeconfig: Path, namespace: str, timeout_text: str, poll_seconds: float) -> None:
    """Wait until every instance in windows-instances has applied the current Proxy generation and
    trusted CA bundle revision (exit 0); exit 1 on timeout or when an instance is failed."""
    try:
        timeout = parse_duration(timeout_text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--timeout") from None
    try:
        api = api_client(kubeconfig)
    except KubeconfigError as exc:
        raise click.ClickException(str(exc)) from exc
    deadline = time.monotonic() + timeout
    shown = ""
    try:
        while True:
            found = assess(read_snapshot(api, namespace))
            line = _describe(found)
            if line != shown:
                click.echo(line)
                shown = line
            if found.failed:
                for failure in found.failed:
                    click.echo(f"error: instance {failure}", err=True)
                raise SystemExit(1)
            if found.complete:
                click.echo(f"rollout complete: {len(found.done)} instance(s) applied revision {found.revision}")
                return
            if time.monotonic() >= deadline:
                click.echo(f"error: timed out after {timeout_text} {shown}", err=True)
                raise SystemExit(1)
            time.sleep(poll_seconds)  # the next look at the cluster
    finally:
        api.close()  # type: ignore[no-untyped-call]
