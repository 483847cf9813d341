"""``proxyfleet restore``: put a cluster back from the snapshot a ``conformance --kubeconfig`` run
saved before it changed anything — for a run that could not do it itself (killed outright, its
machine lost, or a put-back the cluster refused: the run then keeps the file and prints this
command). The file is checked strictly before anything is touched, and one taken of another
cluster is refused unless ``--force`` (which first shows what would change)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import urllib3
from kubernetes import client
from rich.console import Console

from proxyfleet.core.kubeconfig import KubeconfigError, api_client
from proxyfleet.harness.cli.clusterrun import wait_restored_option, wait_seconds, wait_until_restored
from proxyfleet.harness.conformance.results import put_back_lines
from proxyfleet.harness.lab import restoring
from proxyfleet.harness.lab.snapshot import ClusterIdentity, ClusterSnapshot, SnapshotError


class BadSnapshot(click.ClickException):
    """The file is not a snapshot this cluster can be put back from: nothing was touched."""

    exit_code = 2


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--context", metavar="NAME",
              help="The kubeconfig's context to use (default: its current one; a run's printed command names it).")
@click.option("--snapshot", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The snapshot file the run printed it saved.")
@click.option("--force", is_flag=True,
              help="Restore a snapshot taken of another cluster (or by an older proxyfleet) here anyway, after "
                   "showing what would change.")
@click.option("--dry-run", is_flag=True, help="Show what would change and touch nothing.")
@wait_restored_option
def restore(kubeconfig: Path, context: str | None, snapshot: Path, force: bool, dry_run: bool,
            wait_restored: str | None) -> None:
    """Put back the Proxy, trusted CA ConfigMaps, windows-instances and Node cordons a conformance run saved."""
    wait = wait_seconds(wait_restored)
    try:
        saved = ClusterSnapshot.read(snapshot)
        api = api_client(kubeconfig, context)
    except (KubeconfigError, SnapshotError) as exc:
        raise BadSnapshot(str(exc)) from None
    try:
        identity = asyncio.run(ClusterIdentity.read(api))
    except (urllib3.exceptions.HTTPError, OSError) as exc:  # nothing was touched: say where it could not go
        raise click.ClickException(f"cannot reach the cluster's API server {api.configuration.host} "
                                   f"({type(exc).__name__}); {snapshot} is unchanged") from None
    try:
        # a dry run only reads: it may show what another cluster's snapshot would change
        warning = restoring.check_identity(saved, identity, str(snapshot), force or dry_run)
    except SnapshotError as exc:
        raise BadSnapshot(str(exc)) from None
    if warning is not None or dry_run:
        if warning is not None:
            click.echo(f"warning: {warning}", err=True)
        changes = asyncio.run(restoring.plan(saved, api))
        click.echo("would change:" if changes else "nothing would change: the cluster is as the snapshot saved it")
        for line in changes:
            click.echo(f"  {line}")
        if dry_run:
            return
    report = _restore(saved, api)
    for line in report.done or (["nothing to do: the cluster is as the snapshot saved it"] if report.complete else []):
        click.echo(line)
    if not report.complete:
        for line in report.failed:
            click.echo(f"could not put back {line}", err=True)
        raise click.ClickException(f"{len(report.failed)} object(s) could not be put back; {snapshot} is unchanged: "
                                   "run this command again once the cause is fixed")
    if wait is not None:
        found = wait_until_restored(kubeconfig, context, saved.node_cordons, wait, Console(stderr=True))
        if not put_back_lines(found)[0]:
            raise SystemExit(3)


def _restore(saved: ClusterSnapshot, api: client.ApiClient) -> restoring.RestoreReport:
    with restoring.signals_ignored():  # a restore cut short leaves the cluster half put back
        return asyncio.run(restoring.restore(saved, api))
