"""The bring-your-own-proxy options ``conformance`` and ``up`` share: a vendor's proxy started
from a command line, or one already running, instead of the lab's mitmdump. Credentials come from
a file (``--proxy-auth-file``), never from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from proxyfleet.harness.lab.accesslogs import AUTO, NAMED, LogFormatError, check_format
from proxyfleet.harness.lab.vendoroptions import ProxyOptions

EXAMPLE = "squid -N -n {instance} -f {config_dir}/squid.conf"


def proxy_options(function: Any) -> Any:
    """Add the bring-your-own-proxy options to a command (they arrive as keyword arguments)."""
    for option in reversed([
        click.option("--proxy-command", help=f"Start this proxy instead of the lab's mitmdump (e.g. '{EXAMPLE}'); "
                                             "{config_dir}, {instance}, {listen_host}, {listen_port}, {hosts_file}, "
                                             "{egress_address}, {public_ca_file} (and with --proxy-tls-port "
                                             "{tls_port}, {tls_cert_file}, {tls_key_file}) are filled in."),
        click.option("--proxy-image", help="Run the proxy in a container of this local image (host network, the "
                                           "lab's names as extra hosts, {config_dir} mounted); --proxy-command is "
                                           "then its command."),
        click.option("--proxy-url", help="Use this already running proxy (http://host:port on loopback; "
                                         "credentials go in --proxy-auth-file)."),
        click.option("--proxy-listen", metavar="ADDR:PORT",
                     help="Where the started proxy listens (default: an address of the lab's, port 3128; "
                          "a fixed address runs the labs one at a time)."),
        click.option("--proxy-ca", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="The proxy's interception CA (PEM), when it intercepts TLS."),
        click.option("--proxy-tls-port", type=click.IntRange(1, 65535), metavar="PORT",
                     help="The proxy also listens with TLS on this port of its address: the cluster's httpsProxy "
                          "becomes https://…:PORT (httpProxy stays http://, as OpenShift requires). A started "
                          "proxy gets a certificate from the lab: {tls_port}, {tls_cert_file}, {tls_key_file}."),
        click.option("--proxy-tls-ca", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="With --proxy-url and --proxy-tls-port: the CA (PEM) of the running proxy's TLS "
                          "certificate, which must name proxy.corp.internal."),
        click.option("--proxy-auth-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="A file with user:password for the proxy's Basic authentication."),
        click.option("--proxy-config", multiple=True, type=click.Path(exists=True, path_type=Path),
                     help="A file or directory copied into {config_dir}, placeholders filled in (repeatable)."),
        click.option("--proxy-user", help="Run the proxy as this user (when proxyfleet runs as root; Squid "
                                          "refuses to run as root); it owns {config_dir}."),
        click.option("--proxy-unbound-egress", is_flag=True,
                     help="Your proxy cannot choose the address it connects from: its connections leave from "
                          "127.0.0.1 (Linux's choice on loopback), which the lab's internet origins then accept "
                          "instead of an egress address of the lab's ({egress_address} is 127.0.0.1)."),
        click.option("--proxy-etc-hosts", is_flag=True,
                     help="Run the proxy process in a mount namespace of its own whose /etc/hosts is the lab's "
                          "(for a proxy that reads only /etc/hosts; needs root)."),
        click.option("--proxy-access-log", metavar="PATH",
                     help="Where the proxy writes its access log (default {config_dir}/access.log), read as "
                          "--proxy-log-format says; what it says is shown beside verdicts, never decides one."),
        click.option("--proxy-log-format", metavar="FORMAT", default=AUTO, show_default=True,
                     callback=_log_format,
                     help=f"How to read --proxy-access-log: {', '.join(NAMED)} (Squid's native layout, Traffic "
                          "Server's squid format, Apache's/nginx's common or combined, tinyproxy's own log), "
                          f"{AUTO} (each line by the first of those that reads it), or a regular expression with "
                          "named groups: client, and target (a URL or host:port) or host; optionally method, "
                          "status, time, port, path."),
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
