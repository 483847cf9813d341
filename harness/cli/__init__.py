"""The ``proxyfleet`` command line."""

from __future__ import annotations

import click

from proxyfleet.harness.cli.cluster import cluster
from proxyfleet.harness.cli.conformance import conformance
from proxyfleet.harness.cli.fleet import fleet
from proxyfleet.harness.cli.noproxy import noproxy
from proxyfleet.harness.cli.reconcile import reconcile
from proxyfleet.harness.cli.repro import repro
from proxyfleet.harness.cli.up import up


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proxyfleet")
def main() -> None:
    """Conformance harness for cluster-wide egress proxy support on Windows nodes."""


main.add_command(cluster)
main.add_command(conformance)
main.add_command(fleet)
main.add_command(noproxy)
main.add_command(reconcile)
main.add_command(repro)
main.add_command(up)
