"""Per-client proxy rules: how each HTTP client reads HTTP(S)_PROXY / NO_PROXY (DESIGN.md §4)."""

from __future__ import annotations

from harness.noproxy.curl import CurlRules
from harness.noproxy.decisions import ClientRules, Decision, redact_text, redact_url
from harness.noproxy.dotnet import DotnetRules
from harness.noproxy.go import ClientGoRules, GoRules
from harness.noproxy.python import PythonRequestsRules, PythonUrllibRules
from harness.noproxy.winhttp import WinHttpRules

CLIENTS: dict[str, ClientRules] = {
    rules.name: rules
    for rules in (GoRules(), ClientGoRules(), CurlRules(), PythonUrllibRules(),
                  PythonRequestsRules(), DotnetRules(), WinHttpRules())
}

__all__ = ["CLIENTS", "ClientRules", "Decision", "redact_text", "redact_url"]
