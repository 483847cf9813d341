"""The statement parser: the tree a script parses to — statements, pipelines, static calls, precedence, control flow, redirections."""

from __future__ import annotations

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.parsing import parse
from tests.simulators.windows.powershell.scripts import only_pipeline


def test_statements_split_on_semicolons_and_newlines() -> None:
    block = parse("a; b\nc\r\n\n;d")
    names = [s.elements[0].name.value for s in block.statements]  # type: ignore[attr-defined]
    assert names == ["a", "b", "c", "d"]


def test_pipeline_of_commands_with_parameters_and_arguments() -> None:
    pipeline = only_pipeline("Get-ChildItem -Path C:\\k -Recurse | Where-Object { $_.Name -like '*.crt' }")
    first, second = pipeline.elements
    assert isinstance(first, ast.Command) and isinstance(second, ast.Command)
    assert [type(e).__name__ for e in first.elements] == ["CommandParameter", "StringConstant",
                                                          "CommandParameter"]
    assert first.elements[1].value == "C:\\k"  # type: ignore[union-attr]
    assert isinstance(second.elements[0], ast.ScriptBlockLiteral)


def test_static_calls_with_type_literals_and_enum_arguments() -> None:
    expression = only_pipeline(
        "[System.Environment]::SetEnvironmentVariable('A', $null, [EnvironmentVariableTarget]::Machine)"
    ).elements[0]
    assert isinstance(expression, ast.CommandExpression)
    call = expression.expression
    assert isinstance(call, ast.InvokeMember) and call.static
    assert isinstance(call.target, ast.TypeLiteral)
    assert call.target.type_name == "System.Environment"
    assert isinstance(call.arguments[2], ast.Member) and call.arguments[2].static


def test_operator_precedence() -> None:
    expression = only_pipeline("1 + 2 * 3 -eq 7 -and -not $false").elements[0]
    assert isinstance(expression, ast.CommandExpression)
    tree = expression.expression
    assert isinstance(tree, ast.Binary) and tree.operator == "-and"
    assert isinstance(tree.left, ast.Binary) and tree.left.operator == "-eq"
    assert isinstance(tree.left.left, ast.Binary) and tree.left.left.operator == "+"
    assert isinstance(tree.right, ast.Unary) and tree.right.operator == "-not"


def test_assignment_and_control_flow() -> None:
    block = parse("$x = @{ a = 1; 'b c' = 2 }\nif ($x.a -eq 1) { 'one' } elseif ($y) { 2 } else { 3 }\n"
                  "foreach ($i in 1..3) { $i }\ntry { throw 'x' } catch [System.Exception] { $_ } finally { 1 }")
    kinds = [type(s).__name__ for s in block.statements]
    assert kinds == ["Assignment", "IfStatement", "ForEachStatement", "TryStatement"]
    assert len(block.statements[1].clauses) == 2  # type: ignore[attr-defined]


def test_redirections_are_recognised() -> None:
    command = only_pipeline("Get-Item x 2>$null").elements[0]
    assert isinstance(command, ast.Command)
    assert command.redirections[0].stream == "2"
    merged = only_pipeline("Get-Item x 2>&1").elements[0]
    assert merged.redirections[0].target is None  # type: ignore[union-attr]
