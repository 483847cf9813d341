"""Hypothesis strategies shared by the fuzz tests and ``bench/bench_fuzz.py``."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

# Examples per property: bounded in the suite; bench/bench_fuzz.py raises it for a long run.
EXAMPLES = int(os.environ.get("PROXYFLEET_FUZZ_EXAMPLES", "200"))

# Pieces of PowerShell, glued in random order: most results do not parse, many do, and the ones
# that do exercise operators, conversions, members, cmdlets, providers and redirection.
POWERSHELL_PIECES = [
    "$x", "$env:Path", "$null", "$true", "$_", "@()", "@{}", "@{a=1}", "[ordered]@{b=2}", "1", "0", "-1", "2gb",
    "0x10", "1e400", "3.5", "'a'", "'C:\\k'", '"$x"', '"$(1+1)"', "'9'", "''", "(", ")", "{", "}", "[", "]",
    ";", "\n", ",", "|", ".", "::", "..", "=", "+=", "+", "-", "*", "/", "%", "!", "-not", "-eq", "-ne", "-gt",
    "-like", "-match", "-replace", "-split", "-join", "-f", "-is", "-as", "-and", "-or", "-band", "-contains",
    "-in", "[int]", "[string]", "[long]", "[char]", "[datetime]", "[byte[]]", "[Environment]", "[IO.File]",
    "[Convert]", "[Text.Encoding]::UTF8", "::GetEnvironmentVariable", "::SetEnvironmentVariable",
    "::ReadAllText", "::FromBase64String", ".Length", ".Substring", ".Split", ".ToString()", "Get-Item",
    "Get-ChildItem", "Remove-Item", "Set-Content", "Get-Content", "New-Item", "Test-Path", "Write-Output",
    "Select-Object", "Where-Object", "ForEach-Object", "ConvertTo-Json", "ConvertFrom-Json", "Get-Service",
    "Restart-Service", "Import-Certificate", "Get-FileHash", "-Path", "-Force", "-Recurse", "-Name",
    "-ErrorAction", "Stop", "SilentlyContinue", "C:\\", "C:\\k", "C:\\k\\x.txt", "Cert:\\LocalMachine\\Root",
    "HKLM:\\SYSTEM", "Env:\\", "Q:\\x", ">", ">>", "2>&1", "2>$null", "if", "else", "foreach", "in", "try",
    "catch", "finally", "throw", "exit", "return", "powershell.exe", "-Command", "cmd.exe", "/c", "echo",
    "%PATH%", "&&", "`n", "#", "<#", "#>", "@'", "'@", "while", "function", "param",
]

powershell_text = st.one_of(
    st.lists(st.sampled_from(POWERSHELL_PIECES), max_size=14).map(" ".join),
    st.lists(st.sampled_from(POWERSHELL_PIECES), max_size=10).map("".join),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
)

# JSON-like documents: what YAML files and request bodies decode to.
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))


def json_documents(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    keys = st.one_of(st.sampled_from(["apiVersion", "kind", "metadata", "name", "spec", "status", "data",
                                      "networking", "proxy", "httpProxy", "httpsProxy", "noProxy", "baseDomain",
                                      "platform", "additionalTrustBundle", "clusterNetwork", "serviceNetwork",
                                      "machineNetwork", "cidr", "hostPrefix", "trustedCA", "generateName",
                                      "labels", "annotations", "op", "path", "from", "value"]),
                     st.text(max_size=8), st.integers(min_value=-3, max_value=3), st.booleans())
    return st.recursive(json_leaves, lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)), max_leaves=max_leaves)
