"""``proxyfleet noproxy explain|lint``: what each client does with a set of proxy variables."""

from __future__ import annotations

import json
import os

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from proxyfleet.core.noproxy import CLIENTS, Decision, redact_text, redact_url
from proxyfleet.core.noproxy.lint import ClusterFacts, lint

PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy",
                   "ALL_PROXY", "all_proxy", "REQUEST_METHOD")


def _environment(pairs: tuple[str, ...], from_environment: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in PROXY_VARIABLES} if from_environment else {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint="--env")
        env[name] = value
    return env


ENV_OPTION = click.option("--env", "pairs", multiple=True, metavar="NAME=VALUE",
                          help="A proxy variable (repeatable); WinHTTP takes proxy-server= and bypass-list=.")
FROM_ENV_OPTION = click.option("--from-environment", is_flag=True,
                               help="Also read the proxy variables of this shell.")


@click.group()
def noproxy() -> None:
    """How HTTP clients read HTTP(S)_PROXY and NO_PROXY (Go, client-go, curl, Python, .NET, WinHTTP)."""


@noproxy.command()
@click.option("--client", "client_name", required=True,
              type=click.Choice([*CLIENTS, "all"]), help="Which client's rules, or all side by side.")
@ENV_OPTION
@FROM_ENV_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of decisions.")
@click.argument("urls", nargs=-1, required=True)
def explain(client_name: str, pairs: tuple[str, ...], from_environment: bool, as_json: bool,
            urls: tuple[str, ...]) -> None:
    """For each URL: direct or which proxy, and the rule or entry that decided."""
    env = _environment(pairs, from_environment)
    names = [client_name]
    if client_name == "all":
        # WinHTTP reads no environment variables; compare it only when its settings are given.
        winhttp_given = any(k in env for k in ("proxy-server", "bypass-list"))
        names = [n for n in CLIENTS if n != "winhttp" or winhttp_given]
    decisions = [[CLIENTS[name].decide(env, url) for name in names] for url in urls]
    if as_json:
        click.echo(json.dumps([d.as_json() for row in decisions for d in row], indent=2))
        return
    width = max(len(url) for url in urls) + 12 * len(names) + 12
    console = Console(highlight=False, width=max(width, Console().width))
    if len(names) == 1:
        for row in decisions:
            decision = row[0]
            via = f" via {redact_url(decision.proxy)}" if decision.proxy else ""
            console.print(f"{escape(decision.url)}: [bold]{decision.decision}[/bold]{escape(via)} — "
                          f"{escape(redact_text(decision.reason))}")
        return
    table = Table(title="proxy decision per client", show_lines=False)
    table.add_column("URL")
    for name in names:
        table.add_column(name)
    disagreements: list[list[Decision]] = []
    for row in decisions:
        kinds = {d.decision for d in row}
        style = "bold red" if len(kinds) > 1 else ""
        table.add_row(escape(row[0].url), *[f"[{style}]{d.decision}[/]" if style else d.decision for d in row])
        if len(kinds) > 1:
            disagreements.append(row)
    console.print(table)
    for row in disagreements:
        console.print(f"\n[bold red]clients disagree on {escape(row[0].url)}[/bold red]")
        for decision in row:
            console.print(f"  {decision.client:16} {decision.decision:7} {escape(redact_text(decision.reason))}")


@noproxy.command(name="lint")
@ENV_OPTION
@FROM_ENV_OPTION
@click.option("--api-host", multiple=True, help="Internal API host (e.g. api-int.cluster.example.com).")
@click.option("--service-network", multiple=True, help="Service network CIDR.")
@click.option("--cluster-network", multiple=True, help="Cluster (pod) network CIDR.")
@click.option("--machine-network", multiple=True, help="Machine network CIDR.")
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on errors.")
def lint_command(pairs: tuple[str, ...], from_environment: bool, api_host: tuple[str, ...],
                 service_network: tuple[str, ...], cluster_network: tuple[str, ...],
                 machine_network: tuple[str, ...], as_json: bool, strict: bool) -> None:
    """Entries clients read differently, and entries a cluster needs but lacks."""
    env = _environment(pairs, from_environment)
    facts = ClusterFacts(list(api_host), list(service_network), list(cluster_network),
                         list(machine_network))
    try:
        findings = lint(env, facts)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if as_json:
        click.echo(json.dumps([f.as_json() for f in findings], indent=2))
    else:
        console = Console(highlight=False)
        colours = {"error": "bold red", "warning": "yellow", "info": "cyan"}
        for finding in findings:
            clients = f" [dim]({', '.join(finding.clients)})[/dim]" if finding.clients else ""
            console.print(f"[{colours[finding.severity]}]{finding.severity:7}[/] "
                          f"{escape(finding.entry)}: {escape(finding.message)}{clients}", soft_wrap=True)
        if not findings:
            console.print("no findings")
    failing = {"error", "warning"} if strict else {"error"}
    if any(f.severity in failing for f in findings):
        raise SystemExit(1)
