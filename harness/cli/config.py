"""``proxyfleet config init``: a commented starter run file (see ``runfile``) that runs as written
on the lab — with the lab's mitmdump, or a vendor's proxy from the example configuration proxyfleet
ships (``--proxy squid|httpd|trafficserver``, copied beside the run file to edit and check in) —
or with the sections a vendor's running proxy (``--proxy url``) or an existing cluster
(``--cluster``) needs filled in with placeholders to replace."""

from __future__ import annotations

import os
from pathlib import Path

import click

from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.lab.vendorexamples import EXAMPLES, VendorExample, copy_example, example_files

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
  # converge-timeout: 600     # one deadline for every step (default: from each step's rollout)
reconciler:
  variant: correct            # the reference reconciler; or judge your own:
  # command: "my-operator --kubeconfig {kubeconfig} --ssh-port {ssh_port} --max-unavailable {max_unavailable}"
  # reboot-timeout: 600       # seconds it waits for a rebooting node before reporting it
  # resync-period: 60         # seconds between its looks at every node (what repairs drift)
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


def vendor_section(example: VendorExample, as_root: bool) -> str:
    """The ``proxy:`` group that starts ``example`` from its files copied beside the run file."""
    config = f"{example.directory}/{example.config}" if example.config else example.directory
    root_only = "" if as_root else "# "
    def line(setting: str, comment: str) -> str:
        return f"{setting:<30}# {comment}"

    lines = [line("proxy:", f"{example.program} (Debian's {example.package}), started by the lab from the files "
                            f"in {example.directory}/"),
             f'  command: "{example.command.format(program=example.program_path())}"',
             f"  config: [{config}]",
             line(f"  {root_only}user: {example.user}", "as root: it runs as its package's user"
                  + ("" if as_root else " (not root here: it runs as you)"))]
    if example.etc_hosts:
        lines.append(line(f"  {root_only}etc-hosts: true", "it resolves names only through /etc/hosts: the lab's, "
                                                          "in a namespace of its own (root)"))
    if example.note:
        lines.append(f"  # {example.note}")
    return "\n".join(lines) + "\n"


def starter(name: str, proxy: str, cluster: bool, as_root: bool | None = None) -> str:
    """The text of a starter run file."""
    parts = [HEADER.format(name=name)]
    if cluster:
        parts += [CLUSTER]
    else:
        parts += [LAB]
        if proxy == "url":
            parts += [RUNNING_PROXY]
        elif proxy in EXAMPLES:
            parts += [vendor_section(EXAMPLES[proxy], os.geteuid() == 0 if as_root is None else as_root)]
    return "".join([*parts, REPORTS])


@click.group()
def config() -> None:
    """Write a starter run file for proxyfleet conformance --config."""


@config.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), default=Path("proxyfleet.yaml"))
@click.option("--proxy", type=click.Choice(["mitmdump", "url", *EXAMPLES]), default="mitmdump", show_default=True,
              help="mitmdump: the lab's own MITM proxy; url: your proxy, already running; squid, httpd, "
                   "trafficserver: that proxy started by the lab from proxyfleet's example files, copied beside PATH.")
@click.option("--cluster", is_flag=True, help="Judge an existing cluster instead of the lab.")
@click.option("--force", is_flag=True, help="Replace PATH (and the example's files) if they exist.")
def init(path: Path, proxy: str, cluster: bool, force: bool) -> None:
    """Write a commented starter run file (default ./proxyfleet.yaml)."""
    if cluster and proxy != "mitmdump":
        raise click.UsageError("--cluster already asks for the proxy's URL; leave out --proxy")
    example = EXAMPLES.get(proxy)
    try:
        copies = [path.parent / example.directory / item.name for item in example_files(example)] if example else []
        taken = [p for p in [path, *copies] if p.exists() or p.is_symlink()]
        if taken and not force:
            raise click.ClickException(f"{', '.join(map(str, taken))} exist(s); --force replaces them")
        for existing in taken:
            if existing != path:  # the run file itself is replaced in one step below
                existing.unlink()
        if example is not None:
            copy_example(example, path.parent / example.directory)
    except OSError as exc:
        raise click.ClickException(f"cannot write the example's files: {exc}") from None
    write_private(path, starter(path.name, proxy, cluster))
    placeholders = cluster or proxy == "url"
    click.echo(f"wrote {path}" + (f" and {example.directory}/ ({len(copies)} files)" if example else "")
               + f": run it with `proxyfleet conformance --config {path}`"
               + (" once its REPLACE and 'replace' values are yours" if placeholders else ""))
    if example is not None and not example.installed():
        click.echo(f"{example.program} is not installed here: apt-get install {example.package}", err=True)
    if example is not None and example.etc_hosts and os.geteuid() != 0:
        click.echo(f"{example.program} resolves names only through /etc/hosts: on the lab it needs root "
                   "(etc-hosts: true, written commented out here); run proxyfleet as root", err=True)
