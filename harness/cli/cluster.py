"""``proxyfleet cluster``: the embedded control plane in the foreground."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.harness.cli.running import wait_for_stop_signal
from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.controlplane.install import InstallConfigError
from proxyfleet.simulators.network import LabNetwork
from proxyfleet.simulators.pki import new_public_ca, system_bundle_pem, write_certificate


async def _run(settings: ControlPlaneSettings) -> None:
    control_plane = ControlPlane(settings)
    await control_plane.start()
    try:
        click.echo(f"API server:  {control_plane.url} (nodes use {control_plane.internal_url})")
        click.echo(f"kubeconfig:  {control_plane.kubeconfig_path}")
        click.echo(f"try:         KUBECONFIG={control_plane.kubeconfig_path} "
                   "kubectl get proxy cluster -o yaml")
        click.echo("press Ctrl-C to stop", err=True)
        await wait_for_stop_signal()
    finally:
        await control_plane.stop()
        click.echo("control plane stopped", err=True)


@click.command()
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where the kubeconfig is written.")
@click.option("--install-config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Create the cluster from this install-config.yaml.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535))
@click.option("--node-grace-seconds", default=40.0, show_default=True, type=float,
              help="How long a silent kubelet keeps its node Ready.")
def cluster(state_dir: Path, install_config: Path | None, port: int, node_grace_seconds: float) -> None:
    """Run the embedded Kubernetes/OpenShift control plane and write DIR/kubeconfig."""
    try:
        private_directory(state_dir)  # the kubeconfig's credentials go there: ours alone, or refused
    except NotPrivateError as exc:
        raise click.ClickException(f"--state-dir {exc}") from None
    network = LabNetwork()
    public_ca = new_public_ca()
    write_certificate(public_ca, state_dir / "public-ca.crt")
    try:
        settings = ControlPlaneSettings(
            state_dir=state_dir, system_bundle_pem=system_bundle_pem(public_ca.cert_pem.bytes().decode()),
            install_config=install_config.read_text() if install_config else None,
            network=network, port=port, node_grace=node_grace_seconds,
            node_monitor_period=max(node_grace_seconds / 8, 0.5))
        asyncio.run(_run(settings))
    except InstallConfigError as exc:
        raise click.ClickException(str(exc)) from exc
