"""``proxyfleet reconcile``: the reference reconciler against any cluster."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click

from proxyfleet.core.contract import OPERATOR_NAMESPACE, RECONCILER_RESYNC_PERIOD
from proxyfleet.core.kubeconfig import KubeconfigError, api_client
from proxyfleet.core.looplag import process_monitor
from proxyfleet.core.process_limits import raise_open_file_limit
from proxyfleet.harness.cli.running import stop_requested
from proxyfleet.harness.reconciler import VARIANTS, ReconcilerSettings, make_reconciler
from proxyfleet.harness.reconciler.hostkeys import HostKeyPolicyError


async def _run(kubeconfig: Path, settings: ReconcilerSettings, variant: str | None) -> None:
    raise_open_file_limit()
    process_monitor()  # its loop's lag, measured from the start (and logged where a lab asked)
    reconciler = make_reconciler(api_client(kubeconfig), settings, variant)
    with stop_requested() as stopped:
        await reconciler.start()
        try:
            click.echo(f"reconciling Windows instances of {settings.namespace}/windows-instances "
                       f"and Linux nodes of {settings.namespace}/linux-instances "
                       f"(SSH port {settings.ssh_port}, maxUnavailable {settings.max_unavailable}, "
                       f"reboot timeout {settings.reboot_timeout:g} s, resync every {settings.resync_period:g} s"
                       + (f", variant {variant}" if variant else "") + ")", err=True)
            click.echo("watch progress: kubectl get nodes -L proxyfleet.io/proxy-state; press Ctrl-C to stop",
                       err=True)
            await stopped.wait()
        finally:
            await reconciler.stop()


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--namespace", default=OPERATOR_NAMESPACE, show_default=True,
              help="Where windows-instances, cloud-private-key and trusted-ca live.")
@click.option("--ssh-port", default=22, show_default=True, type=click.IntRange(1, 65535))
@click.option("--max-unavailable", default=1, show_default=True, type=click.IntRange(1, 10000),
              help="How many nodes may be rebooting at once.")
@click.option("--variant", type=click.Choice(sorted(VARIANTS)), help="A deliberately broken variant (self-test).")
@click.option("--resync-seconds", default=RECONCILER_RESYNC_PERIOD, show_default=True, type=float)
@click.option("--reboot-timeout", default=600.0, show_default=True, type=float,
              help="Seconds a node may take to come back with a new boot.")
@click.option("--service-poll-seconds", default=2.0, show_default=True, type=float,
              help="After a reboot, how often to check whether the egress services have started.")
@click.option("--drain-retry-seconds", default=5.0, show_default=True, type=float,
              help="How long to wait before asking again for an eviction a PodDisruptionBudget refused.")
@click.option("--drain-timeout", default=600.0, show_default=True, type=float,
              help="Seconds a drain may take before the node is left cordoned and retried later.")
@click.option("--known-hosts", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Strict host keys: contact only the hosts in this OpenSSH known_hosts file, with exactly "
                   "those keys (default: pin each host's key on first contact).")
@click.option("--verbose", "-v", is_flag=True)
def reconcile(kubeconfig: Path, namespace: str, ssh_port: int, max_unavailable: int, variant: str | None,
              resync_seconds: float, reboot_timeout: float, service_poll_seconds: float, drain_retry_seconds: float,
              drain_timeout: float, known_hosts: Path | None, verbose: bool) -> None:
    """Keep every Windows instance's proxy variables and trusted CAs equal to the cluster's."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(message)s")
    settings = ReconcilerSettings(namespace=namespace, ssh_port=ssh_port, max_unavailable=max_unavailable,
                                  resync_period=resync_seconds, reboot_timeout=reboot_timeout,
                                  service_poll=service_poll_seconds, known_hosts=known_hosts,
                                  drain_retry=drain_retry_seconds, drain_timeout=drain_timeout)
    try:
        asyncio.run(_run(kubeconfig, settings, None if variant == "correct" else variant))
    except (KubeconfigError, HostKeyPolicyError) as exc:
        raise click.ClickException(str(exc)) from exc
