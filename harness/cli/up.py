"""``proxyfleet up``: the whole lab in the foreground for a person to explore until Ctrl-C."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import click
import yaml

from proxyfleet.core.contract import OPERATOR_NAMESPACE
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.cli import runfile
from proxyfleet.harness.cli.inputs import CustomerProxy, InputError, read_install_config
from proxyfleet.harness.cli.proxyoptions import PROXY_OPTION_NAMES, proxy_options, proxy_options_from
from proxyfleet.harness.cli.repro import BadInput
from proxyfleet.harness.cli.running import wait_for_stop_signal
from proxyfleet.harness.lab import (
    PROXY2_HOST,
    PROXY2_PORT,
    PROXY_HOST,
    PROXY_PORT,
    Lab,
    LabError,
    LabSettings,
    admin,
    customer_settings,
)
from proxyfleet.harness.lab.vendor import VendorProxyError
from proxyfleet.harness.reconciler import VARIANTS
from proxyfleet.simulators.linux.noderoot import FLAVOURS as LINUX_FLAVOURS
from proxyfleet.simulators.proxy.runner import ProxyServer

READY_LINE = "lab ready; press Ctrl-C to stop"


def describe(lab: Lab) -> list[str]:
    """What a person needs to use the running lab."""
    assert lab.proxy is not None
    (lab.state_dir / "proxy-ca.crt").write_bytes(lab.mitm_ca_pem)
    node = lab.fleet.nodes[0]
    origins = ", ".join(lab.network.names("internet") + lab.network.names("intranet"))
    firewall = "on: internet origins accept only the proxy" if lab.egress_firewall else "off: an open network"
    endpoint = f"{lab.proxy.endpoint.address}:{lab.proxy.endpoint.port}"
    vendor = lab.vendor_proxy
    https_url = f"http://{PROXY_HOST}:{PROXY_PORT}"  # credentials stay out of what is printed
    if vendor is not None and vendor.tls_endpoint is not None:
        endpoint += f", TLS on {vendor.tls_endpoint.port}"
        https_url = f"https://{PROXY_HOST}:{vendor.tls_endpoint.port}"
    lines = [
        f"state:       {lab.state_dir}",
        f"kubeconfig:  {lab.kubeconfig}",
        f"  try:       KUBECONFIG={lab.kubeconfig} kubectl get nodes -L proxyfleet.io/proxy-state",
        f"             KUBECONFIG={lab.kubeconfig} kubectl patch proxy cluster --type merge "
        f"-p '{{\"spec\":{{\"httpProxy\":\"http://{PROXY_HOST}:{PROXY_PORT}\","
        f"\"httpsProxy\":\"{https_url}\"}}}}'",
        f"proxy:       http://{PROXY_HOST}:{PROXY_PORT}"
        + (f" and {https_url}" if https_url.startswith("https://") else "") + " ("
        + (f"your proxy, {endpoint})" if vendor is not None else f"the lab's mitmdump, {endpoint})"),
        f"proxy CA:    {lab.state_dir / 'proxy-ca.crt'} (the CAs nodes must trust for it; put them in a "
        "trustedCA ConfigMap)",
    ]
    if vendor is not None and vendor.config_dir is not None:
        lines.append(f"proxy files: {vendor.config_dir} (hosts file: {vendor.config_dir / 'hosts'}; access log "
                     f"{vendor.access_log_path}; its output in {vendor.directory / 'proxy.log'})")
        if vendor.skipped:
            lines.append(f"  not copied (links and non-regular files are left out): {'; '.join(vendor.skipped)}")
    if lab.proxy2 is not None:
        lines.append(f"proxy 2:     http://***:***@{PROXY2_HOST}:{PROXY2_PORT} (credentials in {lab.state_dir}/"
                     "proxy2-url.txt)")
        write_private(lab.state_dir / "proxy2-url.txt", lab.proxy2_url + "\n")
    lines += [
        f"ssh:         {shlex.join(lab.fleet.ssh_command(node))}",
        f"nodes:       {len(lab.fleet.nodes)} ({lab.fleet.nodes[0].address} … {lab.fleet.nodes[-1].address}, "
        f"port {lab.fleet.port}); manifest {lab.fleet.write_manifest()}",
    ]
    linux = lab.fleet.linux_nodes
    if linux:
        # The lab's own Machine Config Operator drives them (linux-instances, the lab's stand-in for
        # the worker pool); a run judges them with --linux-instance ADDR=USER.
        lines.append(f"linux nodes: {len(linux)} {lab.settings.linux_flavour} ({linux[0].address} … "
                     f"{linux[-1].address}, user {linux[0].config.username}, the same port and key; "
                     f"{OPERATOR_NAMESPACE}/linux-instances lists them)")
    if isinstance(lab.proxy, ProxyServer):
        lines += [f"flows:       {lab.proxy.flow_log_path} (JSON lines)",
                  f"             mitmweb --rfile {lab.proxy.stream_path}"]
    lines += [
        f"origins:     {origins}",
        f"firewall:    {firewall}; refused connections in {lab.violations_path} (JSON lines)",
        f"reconciler:  {lab.settings.reconciler or 'none (run your own against the kubeconfig)'}",
    ]
    return lines


async def _run(settings: LabSettings) -> None:
    async with Lab(settings) as lab:
        await admin.set_instances(lab.api(), [(n.address, n.username) for n in lab.fleet.nodes])
        if lab.fleet.linux_nodes:
            await admin.set_linux_instances(lab.api(), [(n.address, n.config.username) for n in lab.fleet.linux_nodes])
        for line in describe(lab):
            click.echo(line)
        click.echo(READY_LINE, err=True)
        await wait_for_stop_signal()
    click.echo("lab stopped", err=True)


SECTIONS = (
    ("Lab", ("config", "nodes", "linux_nodes", "linux_flavour", "state_dir", "install_config", "egress_firewall")),
    ("Reconciler under test", ("reconciler",)),
    ("Your proxy", PROXY_OPTION_NAMES),
    ("Reports and output", ("help",)),
)


@click.command(cls=runfile.RunFileCommand, sections=SECTIONS, context_settings={"max_content_width": 120})
@runfile.config_option(SECTIONS)
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(1, 2000), help="Windows nodes in the lab.")
@click.option("--linux-nodes", default=0, show_default=True, type=click.IntRange(0, 2000),
              help="Linux workers beside them, in linux-instances (the built-in reconciler configures them too).")
@click.option("--linux-flavour", default="rhcos", show_default=True, type=click.Choice(sorted(LINUX_FLAVOURS)),
              help="The Linux workers' distribution: rhcos (CRI-O, update-ca-trust) or debian (containerd).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the lab's files here (default: a temporary directory, removed at exit).")
@click.option("--install-config", type=click.Path(path_type=Path),
              help="Create the cluster from this install-config.yaml (proxy, additionalTrustBundle, networks).")
@click.option("--reconciler", default="correct", show_default=True, type=click.Choice([*sorted(VARIANTS), "none"]),
              metavar="NAME",
              help="The built-in reconciler (or a broken variant), or none to run your own.")
@click.option("--egress-firewall", default="on", show_default=True, type=click.Choice(["on", "off"]),
              help="on: a corporate network, where internet origins accept only the proxy (so before a proxy is "
                   "configured internet pulls fail); off: an open network.")
@proxy_options
def up(nodes: int, linux_nodes: int, linux_flavour: str, state_dir: Path | None, install_config: Path | None,
       reconciler: str, egress_firewall: str,
       **proxy: Any) -> None:
    """Bring up the whole lab (cluster, proxies, origins, fleet, reconciler) until Ctrl-C."""
    options = proxy_options_from(proxy)
    try:
        vendor = options.spec() if options.given else None
    except VendorProxyError as exc:
        raise BadInput(str(exc)) from None
    try:
        config_text = read_install_config(install_config) if install_config else None
    except InputError as exc:
        raise BadInput(str(exc)) from None
    if state_dir is not None:
        try:
            private_directory(state_dir)  # keys and logs go there: ours alone, or refused
        except NotPrivateError as exc:
            raise BadInput(f"--state-dir {exc}") from None
    targets: list[tuple[str, int, str | None]] = []
    if config_text:
        proxy = (yaml.safe_load(config_text) or {}).get("proxy") or {}
        targets = [(t.host, t.port, t.auth) for t in CustomerProxy(dict(proxy)).targets()]
    settings = LabSettings(nodes=nodes, linux_nodes=linux_nodes, linux_flavour=linux_flavour,
                           state_dir=state_dir.resolve() if state_dir else None,
                           second_proxy=True, egress_firewall=egress_firewall == "on",
                           reconciler=None if reconciler == "none" else reconciler,
                           reboot_duration=1.0, shutdown_delay=0.3, heartbeat=2.0, node_grace=40.0,
                           vendor_proxy=vendor, **customer_settings(config_text, targets))
    try:
        asyncio.run(_run(settings))
    except LabError as exc:  # the lab cannot start as asked (a proxy that exits, say): no traceback
        raise BadInput(str(exc)) from None
