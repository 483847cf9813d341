"""``proxyfleet repro``: a customer's Proxy object, CA bundle and install-config on the lab.

Their proxy host names resolve to the lab proxy (with their credentials), their CA bundle is the
trusted CA with the lab proxy's MITM CA appended (the lab proxy intercepts TLS with its own CA),
``readinessEndpoints`` are dropped (they name the customer's endpoints). The suites then judge the
nodes, and every path is explained by the per-client NO_PROXY decision behind it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from proxyfleet.core.lifecycle import interrupt_on_sigterm
from proxyfleet.core.noproxy import CLIENTS, redact_url
from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.cli import runfile
from proxyfleet.harness.cli.conformance import RunOptions, report_options, run_scenarios, summary_table, write_reports
from proxyfleet.harness.cli.inputs import InputError, read_ca_bundle, read_install_config, read_proxy
from proxyfleet.harness.cli.proxyoptions import PROXY_OPTION_NAMES, proxy_options, proxy_options_from
from proxyfleet.harness.conformance.labevidence import INTERNET_IMAGE, INTRANET_IMAGE
from proxyfleet.harness.conformance.results import ConformanceRun
from proxyfleet.harness.lab.vendor import VendorProxyError
from proxyfleet.harness.reconciler import VARIANTS
from proxyfleet.simulators.origins.catalog import STANDARD_HOSTS
from proxyfleet.simulators.origins.destinations import (
    Destination,
    DestinationError,
    group_destinations,
    parse_destination,
)

# The clients whose reading of the variables matters on a Windows node, and who they are there.
EXPLAINED_CLIENTS = {"go": "containerd", "client-go": "kubelet", "curl": "curl.exe", "dotnet": ".NET/PowerShell 7",
                     "winhttp": "WinHTTP"}


class BadInput(click.ClickException):
    """One clear line and exit status 2: the command's input is wrong, nothing was started."""

    exit_code = 2


def _destinations(api_internal_host: str, customer: Sequence[Destination]) -> list[tuple[str, str, str]]:
    """(label, URL whose route is explained, the check that judges it) for each destination."""
    return [
        ("internet registry", f"https://{INTERNET_IMAGE.split('/', 1)[0]}/v2/", "pull-internet"),
        ("intranet registry", f"https://{INTRANET_IMAGE.split('/', 1)[0]}/v2/", "pull-intranet"),
        ("intranet registry by IP", "https://10.0.5.20/v2/", ""),
        ("internal API (kubelet)", f"https://{api_internal_host}:6443/api", "node-ready"),
        *((f"customer's {d.kind} {d.host}", d.route_url, "destinations") for d in customer),
    ]


def explain_paths(run: ConformanceRun, console: Console, customer: Sequence[Destination] = ()) -> None:
    """For the environment nodes were given, each lab destination's route per client; the reasons
    are printed for every row where clients disagree or a check on that path failed."""
    for scenario in run.scenarios:
        steps = [s for s in scenario.timeline if s.get("environment")]
        if not steps:
            continue
        environment = {k: v for k, v in steps[-1]["environment"].items() if v}
        failed = {c.check for c in scenario.failures()}
        table = Table(title=Text(f"{scenario.name}: routes under the nodes' environment (noproxy explain)"))
        table.add_column("destination")
        for client, who in EXPLAINED_CLIENTS.items():
            table.add_column(f"{client}\n({who})")
        table.add_column("check")
        notes: list[str] = []
        destinations = _destinations(scenario.api_internal_host or "api-int.lab.example.com", customer)
        for label, url, check in destinations:
            decisions = [CLIENTS[c].decide(environment, url) for c in EXPLAINED_CLIENTS]
            disagree = len({d.decision for d in decisions}) > 1
            broken = check in failed
            style = "red" if broken else "yellow" if disagree else ""
            # Text, not markup: a customer's destination may hold brackets ("…/docs[/x]")
            table.add_row(Text(label, style=style), *[Text(d.decision) for d in decisions],
                          Text(f"FAILED {check}", style="red") if broken else Text(check))
            if disagree or broken:
                notes.append(f"{label} ({url}):")
                notes += [f"  {client:9} {d.decision}{' via ' + str(redact_url(d.proxy)) if d.proxy else ''}: "
                          f"{d.reason}" for client, d in zip(EXPLAINED_CLIENTS, decisions, strict=True)]
        notes += _customer_outcomes(customer, environment)
        console.print(table)
        console.print("destinations: " + ", ".join(f"{label} {url}" for label, url, _ in destinations),
                      markup=False, highlight=False, soft_wrap=True)
        for note in notes:
            console.print(note, markup=False, highlight=False)
        console.print("explore: proxyfleet noproxy explain --client all --env NO_PROXY=… URL", highlight=False)


def _customer_outcomes(customer: Sequence[Destination], environment: dict[str, str]) -> list[str]:
    """What each customer destination does on a node and why, in the words of the client that
    reaches it (containerd for an image, curl.exe for a URL)."""
    lines = []
    for destination in customer:
        decision = CLIENTS[destination.client].decide(environment, destination.route_url)
        who = EXPLAINED_CLIENTS[destination.client]
        if decision.decision == "proxy":
            outcome = f"through {redact_url(decision.proxy)}"
        elif destination.kind == "internet":
            outcome = "FAILS: sent direct to an internet destination, which only the proxy may reach"
        else:
            outcome = "direct (an intranet destination: reachable)"
        lines.append(f"{destination.describe()}: {who} {decision.decision}: {decision.reason} → {outcome}")
    return lines


SECTIONS = (
    ("Lab", ("config", "proxy_file", "ca_bundle", "install_config", "internet", "intranet", "nodes",
             "converge_timeout", "keep")),
    ("Reconciler under test", ("variant", "reconciler_command")),
    ("Your proxy", PROXY_OPTION_NAMES),
    ("Reports and output", ("json_path", "junit", "html", "flows", "help")),
)


@click.command(cls=runfile.RunFileCommand, sections=SECTIONS, context_settings={"max_content_width": 120})
@runfile.config_option(SECTIONS)
@click.option("--proxy", "proxy_file", required=True, type=click.Path(path_type=Path),
              help="The customer's Proxy object (oc get proxy cluster -o yaml).")
@click.option("--ca-bundle", type=click.Path(path_type=Path), help="The customer's trusted CA bundle (PEM).")
@click.option("--install-config", type=click.Path(path_type=Path), help="The customer's install-config.yaml.")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(1, 2000), help="Windows nodes in the lab.")
@click.option("--variant", default="correct", show_default=True, type=click.Choice(sorted(VARIANTS)), metavar="NAME",
              help="The reference reconciler, or a deliberately broken one (a wrong name lists them).")
@click.option("--reconciler-command", help="Reproduce with this external reconciler instead.")
@click.option("--destination", "internet", multiple=True, metavar="URL|IMAGE",
              help="A customer destination on the internet (reachable only through the proxy): an https:// or "
                   "http:// URL that nodes fetch with curl.exe, or an image reference they pull "
                   "(registry.acme.example/team/app:1.0). Repeatable.")
@click.option("--intranet-destination", "intranet", multiple=True, metavar="URL|IMAGE",
              help="The same for a destination on the intranet (reachable directly). Repeatable.")
@report_options
@proxy_options
def repro(proxy_file: Path, ca_bundle: Path | None, install_config: Path | None, nodes: int, variant: str,
          reconciler_command: str | None, internet: tuple[str, ...], intranet: tuple[str, ...],
          junit: Path | None, json_path: Path | None, html: Path | None,
          flows: Path | None, keep: Path | None, converge_timeout: float | None, **proxy_values: Any) -> None:
    """Reproduce a customer's proxy settings on the lab and explain every failing path."""
    interrupt_on_sigterm()
    vendor = proxy_options_from(proxy_values)
    try:
        destinations = [parse_destination(t, "internet") for t in internet] + \
            [parse_destination(t, "intranet") for t in intranet]
        group_destinations(destinations, STANDARD_HOSTS)
    except DestinationError as exc:
        raise BadInput(str(exc)) from None
    try:
        if vendor.given:
            vendor.spec()  # checked before anything starts
        if vendor.tls_port is not None:
            # The customer's proxy names map onto the proxy's plain listener (their URLs keep
            # their scheme); a TLS listener there would need their certificate's names.
            raise VendorProxyError("repro does not take --proxy-tls-port: the customer's proxy URLs are "
                                   "reproduced as given (use conformance or up for a TLS listener)")
    except VendorProxyError as exc:
        raise BadInput(str(exc)) from None
    try:
        proxy = read_proxy(proxy_file)
        bundle = read_ca_bundle(ca_bundle) if ca_bundle else b""
        config_text = read_install_config(install_config) if install_config else None
    except InputError as exc:
        raise BadInput(str(exc)) from None
    console = Console(stderr=True)
    for warning in proxy.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {warning}"))
    targets = proxy.targets()
    console.print(("customer proxy → your proxy: " if vendor.given else "customer proxy → lab proxy: ")
                  + ", ".join(f"{t.host}:{t.port}" for t in targets)
                  + ("; the bundle gets the lab's MITM CA appended" if bundle else
                     "; no --ca-bundle: nodes trust only the lab's MITM CA"), markup=False)
    scratch = Path(tempfile.mkdtemp(prefix="proxyfleet-repro-"))
    try:
        spec_path = scratch / "repro.json"
        # it holds the customer's proxy credentials
        write_private(spec_path, json.dumps({
            "proxy": {k: proxy.spec.get(k, "") for k in ("httpProxy", "httpsProxy", "noProxy")},
            "bundle": bundle.decode(), "install_config": config_text,
            "targets": [[t.host, t.port, t.auth] for t in targets],
            "destinations": [[d.text, d.kind] for d in destinations]}))
        options = RunOptions(nodes=nodes, variant=variant, reconciler_command=reconciler_command,
                             converge_timeout=converge_timeout, keep=keep, proxy=vendor,
                             extra_args=[f"--proxyfleet-repro={spec_path}"])
        outcome = run_scenarios(options, scratch, console, selected=1)
        console.print(summary_table(outcome.run))
        explain_paths(outcome.run, console, destinations)
        for scenario in outcome.run.scenarios:
            for failure in scenario.failures()[:20]:
                console.print(Text.assemble(("✗", "red"), f" {failure.describe()}"))
        write_reports(outcome, console, json_path, junit, html, flows)
        console.print(outcome.verdict())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(outcome.exit_code)
