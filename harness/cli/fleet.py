"""``proxyfleet fleet``: a fleet of simulated Windows nodes, and Linux nodes beside them, in the
foreground."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import click
from kubernetes.client.exceptions import ApiException

from proxyfleet.core.kubeconfig import KubeconfigError, api_client, internal_api_url, loopback_address, read_access
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.core.process_limits import raise_open_file_limit
from proxyfleet.harness.cli.running import wait_for_stop_signal
from proxyfleet.simulators.controlplane.authorization import NodeTokens
from proxyfleet.simulators.controlplane.cluster import NODE_CREDENTIALS
from proxyfleet.simulators.fleet import DEFAULT_SHELLS, Fleet, FleetError, FleetSettings
from proxyfleet.simulators.kubelet import KubeletSettings
from proxyfleet.simulators.linux.noderoot import FLAVOURS
from proxyfleet.simulators.network import Endpoint, LabNetwork


def kubelet_settings(kubeconfig: Path, network: LabNetwork, heartbeat: float) -> KubeletSettings:
    """Point the fleet's kubelets at the cluster behind ``kubeconfig``, through the lab table."""
    access = read_access(kubeconfig)
    internal = internal_api_url(api_client(kubeconfig))
    parts = urlsplit(internal)
    network.add(parts.hostname or "", parts.port or 443,
                Endpoint(loopback_address(access.host), access.port), "control-plane")
    # The embedded cluster leaves the key its kubelet tokens derive from beside its kubeconfig:
    # each kubelet then acts as system:node:<name>, not with the kubeconfig's own rights.
    credentials = kubeconfig.parent / NODE_CREDENTIALS
    token: str | Callable[[str], str] = access.token
    if credentials.exists():
        try:
            token = NodeTokens(bytes.fromhex(credentials.read_text().strip())).token
        except ValueError:
            raise KubeconfigError(f"{credentials} does not hold a node credentials key") from None
    return KubeletSettings(api_url=internal, token=token, ca_pem=access.ca_pem,
                           lease_interval=heartbeat, status_interval=heartbeat)


async def _run(settings: FleetSettings) -> None:
    raise_open_file_limit()
    fleet = Fleet(settings)
    await fleet.start()
    try:
        manifest = settings.state_dir / "fleet.json"
        linux = f" and {len(fleet.linux_nodes)} Linux ({settings.linux_flavour})" if fleet.linux_nodes else ""
        click.echo(f"{len(fleet.nodes)} Windows{linux} nodes listening on port {fleet.port}")
        click.echo(f"fleet manifest: {manifest}")
        if fleet.nodes:
            command = " ".join(shlex.quote(part) for part in fleet.ssh_command(fleet.nodes[0]))
            click.echo(f"log in:        {command}")
            click.echo(f"run a command: {command} 'Get-Service kubelet'")
        if fleet.linux_nodes:
            command = " ".join(shlex.quote(part) for part in fleet.ssh_command(fleet.linux_nodes[0]))
            click.echo(f"a Linux node:  {command} 'systemctl is-active kubelet'")
        click.echo("press Ctrl-C to stop", err=True)
        await wait_for_stop_signal()
    finally:
        await fleet.stop()
        click.echo("fleet stopped", err=True)


@click.command()
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(0, 60000),
              help="How many nodes to start.")
@click.option("--linux", "linux_nodes", default=0, show_default=True, type=click.IntRange(0, 30000),
              help="How many Linux nodes to start beside them (needs root: mount namespaces).")
@click.option("--linux-flavour", type=click.Choice(sorted(FLAVOURS)), default="rhcos", show_default=True,
              help="The Linux nodes' kind: rhcos (OpenShift's workers) or debian (a CAPI cluster's).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where keys, node disks and fleet.json live.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="SSH port shared by every node (0 picks a free one).")
@click.option("--network", default="127.10.0.0/16", show_default=True,
              help="Loopback range the node addresses come from.")
@click.option("--reboot-seconds", default=1.0, show_default=True, type=float,
              help="How long a rebooting node refuses connections.")
@click.option("--restart-reads-current-environment", is_flag=True,
              help="Model Windows builds where Restart-Service picks up new machine variables.")
@click.option("--default-shell", type=click.Choice(DEFAULT_SHELLS), default="cmd", show_default=True,
              help="OpenSSH's default shell on the nodes: cmd (Windows' default), powershell (DefaultShell "
                   "set), or mixed (alternating).")
@click.option("--service-stage-seconds", default=5.0, show_default=True, type=float,
              help="After a reboot sshd answers first; each later boot stage of services starts this much later.")
@click.option("--lost-exit-status-rate", default=0.3, show_default=True, type=click.FloatRange(0, 1),
              help="How often Restart-Computer over SSH ends without an exit status (OCPBUGS-90077).")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Kubelets register with this cluster (its internal API name maps to its endpoint).")
@click.option("--heartbeat-seconds", default=10.0, show_default=True, type=float,
              help="How often kubelets renew their lease.")
def fleet(nodes: int, linux_nodes: int, linux_flavour: str, state_dir: Path, port: int, network: str,
          reboot_seconds: float,
          restart_reads_current_environment: bool, default_shell: str, service_stage_seconds: float,
          lost_exit_status_rate: float, kubeconfig: Path | None, heartbeat_seconds: float) -> None:
    """Run simulated Windows (and Linux) nodes until SIGINT/SIGTERM and write DIR/fleet.json."""
    lab_network = LabNetwork()
    try:
        private_directory(state_dir)  # node keys go there: ours alone, or refused
        kubelet = kubelet_settings(kubeconfig, lab_network, heartbeat_seconds) if kubeconfig else None
        settings = FleetSettings(
            nodes=nodes, linux_nodes=linux_nodes, linux_flavour=linux_flavour, state_dir=state_dir, port=port,
            network=network,
            reboot_duration=reboot_seconds, lab_network=lab_network, kubelet=kubelet,
            restart_reads_current_environment=restart_reads_current_environment, default_shell=default_shell,
            service_stage_seconds=service_stage_seconds, lost_exit_status_rate=lost_exit_status_rate)
        asyncio.run(_run(settings))
    except NotPrivateError as exc:
        raise click.ClickException(f"--state-dir {exc}") from None
    except (FleetError, KubeconfigError) as exc:
        raise click.ClickException(str(exc)) from exc
    except ApiException as exc:
        raise click.ClickException(f"reading the cluster's Infrastructure failed: {exc.status} "
                                   f"{exc.reason}") from exc
