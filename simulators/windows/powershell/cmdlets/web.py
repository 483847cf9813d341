"""``Invoke-WebRequest`` as in Windows PowerShell 5.1: it uses the WinINet (Internet Options)
proxy, never HTTP(S)_PROXY — so on a node configured only through environment variables it goes
direct unless ``-Proxy`` is given. A well-known source of "works in curl, fails in PowerShell"."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from proxyfleet.simulators.egress.client import EgressError, EgressSession
from proxyfleet.simulators.windows.egress import machine_trust, node_network, recording
from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.values import Hashtable, PSObject, to_string

_TYPE = "Microsoft.PowerShell.Commands.InvokeWebRequestCommand"
_MESSAGES = {
    "dns": "The remote name could not be resolved: '{host}'",
    "proxy-dns": "The proxy name could not be resolved: '{proxy}'",
    "refused": "Unable to connect to the remote server",
    "proxy-refused": "Unable to connect to the remote server",
    "tls-unknown-authority": "The underlying connection was closed: Could not establish trust "
                             "relationship for the SSL/TLS secure channel.",
    "tls-hostname": "The underlying connection was closed: Could not establish trust relationship "
                    "for the SSL/TLS secure channel.",
    "reset": "The underlying connection was closed: An unexpected error occurred on a receive.",
    "tls": "The underlying connection was closed: An unexpected error occurred on a send.",
    "timeout": "The operation has timed out.",
}


async def invoke_web_request(ctx: CommandContext, args: dict[str, Any]) -> None:
    uri = args["Uri"]
    if "://" not in uri:
        uri = "http://" + uri
    proxy = args.get("Proxy")
    network, address = node_network(ctx.interpreter)
    machine = ctx.session.machine
    parts = urlsplit(uri)
    method = (args.get("Method") or "GET").upper()
    headers = [(to_string(k), to_string(v)) for k, v in (args.get("Headers") or Hashtable()).items()]
    async with EgressSession(network, address, machine_trust(machine),
                             user_agent="Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) "
                                        "WindowsPowerShell/5.1.20348.2031",
                             **recording(machine, "powershell")) as session:
        try:
            response = await session.request(method, uri, proxy=proxy, headers=headers,
                                             body=to_string(args.get("Body") or "").encode())
        except EgressError as exc:
            template = _MESSAGES.get(exc.kind)
            if exc.kind == "proxy-status":
                message = f"The remote server returned an error: ({exc.status}) " + (
                    "Proxy Authentication Required." if exc.status == 407 else f"{exc.detail}.")
            else:
                message = (template or exc.detail).format(host=parts.hostname, proxy=proxy)
            ctx.fail(message, "WebCmdletWebResponseException", "InvalidOperation", "WebException",
                     "System.Net.HttpWebRequest", "HttpWebRequest")
    if response.status >= 400:
        ctx.fail(f"The remote server returned an error: ({response.status}) {response.reason}.",
                 "WebCmdletWebResponseException", "InvalidOperation", "WebException",
                 "System.Net.HttpWebRequest", "HttpWebRequest")
    if args.get("OutFile"):
        ctx.session.write_file(ctx.session.resolve_file_path(args["OutFile"]), response.body)
        return
    content = response.body.decode("utf-8", errors="replace")
    ctx.write(PSObject(["Microsoft.PowerShell.Commands.WebResponseObject"], {
        "StatusCode": response.status, "StatusDescription": response.reason,
        "Content": content, "RawContentLength": len(response.body),
        "Headers": Hashtable(response.headers),
    }, display=("StatusCode", "StatusDescription", "Content", "RawContentLength"),
        string_form=content))


CMDLETS = (
    CmdletSpec("Invoke-WebRequest", _TYPE, invoke_web_request, (
        Param("Uri", "string", position=0, mandatory=True),
        Param("Method", "string", choices=("Default", "Get", "Head", "Post", "Put", "Delete",
                                            "Trace", "Options", "Merge", "Patch")),
        Param("UseBasicParsing", "switch"), Param("OutFile", "string"), Param("Proxy", "string"),
        Param("ProxyUseDefaultCredentials", "switch"), Param("Headers", "hashtable"),
        Param("Body", "object"), Param("TimeoutSec", "int"), Param("MaximumRedirection", "int"),
        Param("ContentType", "string"), Param("UserAgent", "string"))),
)
