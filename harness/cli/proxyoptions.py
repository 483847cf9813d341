"""The bring-your-own-proxy options ``conformance`` and ``up`` share: a vendor's proxy started
from a command line, or one already running, instead of the lab's mitmdump. Credentials come from
a file (``--proxy-auth-file``), never from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from proxyfleet.harness.lab.accesslogs import AUTO, NAMED, LogFormatError, check_format
from proxyfleet.harness.lab.vendoroptions import ProxyOptions

# the options proxy_options adds, in the order --help lists them under "Your proxy"
PROXY_OPTION_NAMES = ("proxy_command", "proxy_image", "proxy_config", "proxy_user", "proxy_listen", "proxy_url",
                      "proxy_auth_file", "proxy_ca", "proxy_tls_port", "proxy_tls_ca", "proxy_access_log",
                      "proxy_log_format", "proxy_etc_hosts", "proxy_unbound_egress")


def proxy_options(function: Any) -> Any:
    """Add the bring-your-own-proxy options to a command (they arrive as keyword arguments)."""
    for option in reversed([
        click.option("--proxy-command",
                     help="Start this proxy instead of mitmdump ({config_dir}, {listen_host}, {listen_port}, … filled "
                          "in; see README)."),
        click.option("--proxy-image", help="Run --proxy-command in a container of this local image."),
        click.option("--proxy-url", help="Use this running proxy, http://HOST:PORT on loopback."),
        click.option("--proxy-listen", metavar="ADDR:PORT",
                     help="Where the started proxy listens (default: a lab address, port 3128)."),
        click.option("--proxy-ca", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="The proxy's TLS interception CA (PEM), if it intercepts."),
        click.option("--proxy-tls-port", type=click.IntRange(1, 65535), metavar="PORT",
                     help="The proxy also listens with TLS on this port: httpsProxy becomes https://…:PORT."),
        click.option("--proxy-tls-ca", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="With --proxy-url --proxy-tls-port: the CA of the proxy's TLS certificate (PEM)."),
        click.option("--proxy-auth-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="A file holding user:password for the proxy's Basic authentication."),
        click.option("--proxy-config", multiple=True, type=click.Path(exists=True, path_type=Path),
                     help="A file or directory copied into {config_dir}, placeholders filled in (repeatable)."),
        click.option("--proxy-user", help="Run the proxy as this user (when proxyfleet runs as root)."),
        click.option("--proxy-unbound-egress/--no-proxy-unbound-egress", default=False,
                     help="Your proxy connects from 127.0.0.1, not from the lab's egress address."),
        click.option("--proxy-etc-hosts/--no-proxy-etc-hosts", default=False,
                     help="Give the proxy the lab's names as its /etc/hosts (needs root)."),
        click.option("--proxy-access-log", metavar="PATH",
                     help="The proxy's access log, shown beside verdicts (default: {config_dir}/access.log)."),
        click.option("--proxy-log-format", metavar="FORMAT", default=AUTO, show_default=True,
                     callback=_log_format,
                     help=f"How to read the access log: {', '.join(NAMED)}, {AUTO}, or a regex (see README)."),
    ]):
        function = option(function)
    return function


def _log_format(_context: click.Context, _parameter: click.Parameter, value: str) -> str:
    """A bad --proxy-log-format is refused as the command line is read."""
    try:
        return check_format(value)
    except LogFormatError as exc:
        raise click.BadParameter(str(exc)) from None


def proxy_options_from(values: dict[str, Any]) -> ProxyOptions:
    """Pop the options ``proxy_options`` added from a command's keyword arguments."""
    return ProxyOptions(command=values.pop("proxy_command", None), url=values.pop("proxy_url", None),
                        image=values.pop("proxy_image", None),
                        listen=values.pop("proxy_listen", None), ca_file=values.pop("proxy_ca", None),
                        auth_file=values.pop("proxy_auth_file", None),
                        config=tuple(values.pop("proxy_config", ()) or ()), user=values.pop("proxy_user", None),
                        access_log=values.pop("proxy_access_log", None),
                        log_format=values.pop("proxy_log_format", None) or AUTO,
                        own_etc_hosts=bool(values.pop("proxy_etc_hosts", False)),
                        unbound_egress=bool(values.pop("proxy_unbound_egress", False)),
                        tls_port=values.pop("proxy_tls_port", None), tls_ca_file=values.pop("proxy_tls_ca", None))
