"""``proxyfleet config init``: a commented starter run file (see ``runfile``) that runs as written
on the lab, with the sections a vendor's running proxy (``--proxy url``) or an existing cluster
(``--cluster``) needs filled in with placeholders to replace."""

from __future__ import annotations

from pathlib import Path

import click

from proxyfleet.core.secretfiles import write_private

HEADER = """\
# A proxyfleet run: `proxyfleet conformance --config {name}` (options on the command line win).
# Every key is an option of `proxyfleet conformance --help`, under its heading, without its dashes
# and its group's prefix (proxy: {{command: …}} is --proxy-command). Relative paths are relative to
# this file. No key takes a secret: credentials stay in the files --proxy-auth-file and --ssh-key name.
"""

LAB = """\
lab:
  nodes: 10                   # Windows nodes per lab
  # workflow: [runtime-add, change, remove]   # default: every workflow
  # converge-timeout: 60      # seconds each step may take to converge
reconciler:
  variant: correct            # the reference reconciler; or judge your own:
  # command: "my-operator --kubeconfig {kubeconfig} --ssh-port {ssh_port} --max-unavailable {max_unavailable}"
  # reboot-timeout: 600       # seconds it waits for a rebooting node before reporting it
"""

RUNNING_PROXY = """\
proxy:                        # your proxy, already running (`proxyfleet hosts` prints the names it must resolve)
  url: http://127.0.0.1:3128  # replace: where it listens, on loopback
  # auth-file: proxy-auth     # a file holding user:password, if it asks
  # ca: proxy-ca.pem          # its interception CA, if it intercepts TLS
"""

CLUSTER = """\
cluster:                      # an existing cluster: its own reconciler is judged, its objects put back after
  kubeconfig: kubeconfig      # replace
  target-cluster: REPLACE     # its Infrastructure's infrastructureName: `--dry-run` prints it
  ssh-key: id_ed25519         # replace: the key the Windows instances accept
  # ssh-known-hosts: known_hosts
  # internet-image: quay.io/…  # pulled through the proxy (pull-internet is skipped without one)
proxy:
  url: http://proxy.corp.example:3128   # replace: the proxy the nodes reach
"""

REPORTS = """\
reports:
  json: proxyfleet.json       # `proxyfleet report show proxyfleet.json` reads it
  junit: proxyfleet.xml
  html: proxyfleet.html
"""


def starter(name: str, proxy: str, cluster: bool) -> str:
    """The text of a starter run file."""
    parts = [HEADER.format(name=name)]
    if cluster:
        parts += [CLUSTER]
    else:
        parts += [LAB] + ([RUNNING_PROXY] if proxy == "url" else [])
    return "".join([*parts, REPORTS])


@click.group()
def config() -> None:
    """Write a starter run file for proxyfleet conformance --config."""


@config.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), default=Path("proxyfleet.yaml"))
@click.option("--proxy", type=click.Choice(["mitmdump", "url"]), default="mitmdump", show_default=True,
              help="mitmdump: the lab's own MITM proxy; url: your proxy, already running.")
@click.option("--cluster", is_flag=True, help="Judge an existing cluster instead of the lab.")
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
def init(path: Path, proxy: str, cluster: bool, force: bool) -> None:
    """Write a commented starter run file (default ./proxyfleet.yaml)."""
    if path.exists() and not force:
        raise click.ClickException(f"{path} exists; --force replaces it")
    if cluster and proxy == "url":
        raise click.UsageError("--cluster already asks for the proxy's URL; leave out --proxy")
    write_private(path, starter(path.name, proxy, cluster))
    click.echo(f"wrote {path}: run it with `proxyfleet conformance --config {path}`"
               + ("" if not (cluster or proxy == "url") else " once its REPLACE and 'replace' values are yours"))
