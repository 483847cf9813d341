"""What the PowerShell tests share: the machine environment's registry path, and the one pipeline
a snippet parses to."""

from __future__ import annotations

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.parsing import parse

ENV_KEY = r"HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"


def only_pipeline(text: str) -> ast.Pipeline:
    block = parse(text)
    assert len(block.statements) == 1
    statement = block.statements[0]
    assert isinstance(statement, ast.Pipeline)
    return statement
