"""The ``proxyfleet`` command line.

Subcommands are imported when they run, not when the command starts: ``proxyfleet --help`` and
``proxyfleet noproxy explain`` must not pay for the Kubernetes client, mitmproxy and asyncssh
that the lab commands load."""

from __future__ import annotations

import importlib
from typing import Any

import click

# name -> (module, the one-line help `proxyfleet --help` shows without importing the module;
# tests/harness/cli/test_cli.py keeps it equal to the command's own)
COMMANDS: dict[str, tuple[str, str]] = {
    "cluster": ("proxyfleet.harness.cli.cluster",
                "Run the embedded Kubernetes/OpenShift control plane and write DIR/kubeconfig."),
    "config": ("proxyfleet.harness.cli.config", "Write a starter run file for proxyfleet conformance --config."),
    "conformance": ("proxyfleet.harness.cli.conformance",
                    "Judge a reconciler by the conformance scenarios, on the lab or an existing cluster."),
    "fleet": ("proxyfleet.harness.cli.fleet",
              "Run simulated Windows (and Linux) nodes until SIGINT/SIGTERM and write DIR/fleet.json."),
    "hosts": ("proxyfleet.harness.cli.hosts",
              "Print the lab's hosts file and egress address for a proxy you run yourself (--proxy-url)."),
    "noproxy": ("proxyfleet.harness.cli.noproxy",
                "How HTTP clients read HTTP(S)_PROXY and NO_PROXY (Go, client-go, curl, Python, .NET, WinHTTP)."),
    "reconcile": ("proxyfleet.harness.cli.reconcile",
                  "Keep every Windows instance's proxy variables and trusted CAs equal to the cluster's."),
    "rollout": ("proxyfleet.harness.cli.rollout",
                "Follow the rollout of the cluster's proxy settings to the Windows instances."),
    "restore": ("proxyfleet.harness.cli.restore",
                "Put back the Proxy, trusted CA ConfigMaps, windows-instances and Node cordons a conformance run "
                "saved."),
    "report": ("proxyfleet.harness.cli.report",
               "Read a conformance run's JSON report: the summary and the failures grouped by cause."),
    "repro": ("proxyfleet.harness.cli.repro",
              "Reproduce a customer's proxy settings on the lab and explain every failing path."),
    "up": ("proxyfleet.harness.cli.up",
           "Bring up the whole lab (cluster, proxies, origins, fleet, reconciler) until Ctrl-C."),
}


class LazyGroup(click.Group):
    """A group whose subcommands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        command = getattr(importlib.import_module(COMMANDS[cmd_name][0]), cmd_name)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proxyfleet")
def main(**_: Any) -> None:
    """Conformance harness for cluster-wide egress proxy support on Windows nodes."""
