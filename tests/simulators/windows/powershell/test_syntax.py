"""The syntax tree's node types: what a command, its parameters and arguments, and a pipeline look
like to the interpreter."""

from __future__ import annotations

from proxyfleet.simulators.windows.powershell import syntax as ast
from tests.simulators.windows.powershell.scripts import only_pipeline


def test_a_pipeline_is_a_list_of_commands_in_order() -> None:
    pipeline = only_pipeline("Get-ChildItem -Path Cert:\\LocalMachine\\Root | Where-Object { $_.Subject } | Remove-Item")
    commands = [element for element in pipeline.elements if isinstance(element, ast.Command)]
    assert len(commands) == len(pipeline.elements) == 3
    names = [c.name.value for c in commands if isinstance(c.name, ast.StringConstant)]
    assert names == ["Get-ChildItem", "Where-Object", "Remove-Item"]
    parameter, argument = commands[0].elements
    assert isinstance(parameter, ast.CommandParameter) and parameter.name.lower() == "path"
    assert isinstance(argument, ast.StringConstant) and argument.value == "Cert:\\LocalMachine\\Root"
