"""``proxyfleet restore``: put a cluster back from the snapshot a ``conformance --kubeconfig`` run
saved before it changed anything — for a run that could not do it itself (killed outright, its
machine lost). A run that ends any other way, Ctrl-C and SIGTERM included, restores by itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from proxyfleet.core.kubeconfig import KubeconfigError, api_client
from proxyfleet.harness.lab.snapshot import ClusterSnapshot, SnapshotError


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--snapshot", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The cluster-snapshot.json the run printed it saved.")
def restore(kubeconfig: Path, snapshot: Path) -> None:
    """Put back the Proxy, trusted CA ConfigMaps, windows-instances and Node cordons a conformance run saved."""
    try:
        saved = ClusterSnapshot.read(snapshot)
        done = asyncio.run(saved.restore(api_client(kubeconfig)))
    except (KubeconfigError, SnapshotError) as exc:
        raise click.ClickException(str(exc)) from None
    for line in done or ["nothing to do: the cluster is as the snapshot saved it"]:
        click.echo(line)
