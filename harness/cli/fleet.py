"""``proxyfleet fleet``: a fleet of simulated Windows nodes in the foreground."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import click

from harness.cli.running import wait_for_stop_signal
from simulators.fleet import Fleet, FleetError, FleetSettings


async def _run(settings: FleetSettings) -> None:
    fleet = Fleet(settings)
    await fleet.start()
    try:
        manifest = settings.state_dir / "fleet.json"
        click.echo(f"{len(fleet.nodes)} Windows nodes listening on port {fleet.port}")
        click.echo(f"fleet manifest: {manifest}")
        if fleet.nodes:
            command = " ".join(shlex.quote(part) for part in fleet.ssh_command(fleet.nodes[0]))
            click.echo(f"log in:        {command}")
            click.echo(f"run a command: {command} 'Get-Service kubelet'")
        click.echo("press Ctrl-C to stop", err=True)
        await wait_for_stop_signal()
    finally:
        await fleet.stop()
        click.echo("fleet stopped", err=True)


@click.command()
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(0, 60000),
              help="How many nodes to start.")
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
def fleet(nodes: int, state_dir: Path, port: int, network: str, reboot_seconds: float,
          restart_reads_current_environment: bool) -> None:
    """Run simulated Windows nodes until SIGINT/SIGTERM and write DIR/fleet.json."""
    try:
        settings = FleetSettings(
            nodes=nodes, state_dir=state_dir, port=port, network=network,
            reboot_duration=reboot_seconds,
            restart_reads_current_environment=restart_reads_current_environment)
        asyncio.run(_run(settings))
    except FleetError as exc:
        raise click.ClickException(str(exc)) from exc
