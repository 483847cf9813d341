"""``proxyfleet hosts``: what a proxy you start yourself needs before a ``--proxy-url`` run: the
lab's hosts file (its virtual names on their loopback addresses) and the address its outgoing
connections must leave from."""

from __future__ import annotations

from pathlib import Path

import click

from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.lab.assembly import well_known_plan


@click.command()
@click.option("--write", "target", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the hosts file here (else print it).")
def hosts(target: Path | None) -> None:
    """Print the lab's hosts file and egress address for a proxy you run yourself (--proxy-url)."""
    text, egress = well_known_plan()
    if target is not None:
        write_private(target, text)
        text = f"# written to {target}\n"
    click.echo(text, nl=False)
    click.echo(f"# outgoing connections must leave from {egress} (Squid: tcp_outgoing_address {egress}); "
               "the internet origins accept no other address")
