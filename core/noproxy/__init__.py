"""Per-client proxy rules: how each HTTP client reads HTTP(S)_PROXY / NO_PROXY (DESIGN.md §4)."""

from __future__ import annotations

from proxyfleet.core.noproxy.curl import CurlRules
from proxyfleet.core.noproxy.decisions import ClientRules, Decision, redact_text, redact_url
from proxyfleet.core.noproxy.dotnet import DotnetRules
from proxyfleet.core.noproxy.go import ClientGoRules, GoRules
from proxyfleet.core.noproxy.python import PythonRequestsRules, PythonUrllibRules
from proxyfleet.core.noproxy.winhttp import WinHttpRules

CLIENTS: dict[str, ClientRules] = {
    rules.name: rules
    for rules in (GoRules(), ClientGoRules(), CurlRules(), PythonUrllibRules(),
                  PythonRequestsRules(), DotnetRules(), WinHttpRules())
}

__all__ = ["CLIENTS", "ClientRules", "Decision", "redact_text", "redact_url"]
