"""The tokenizer and parser: structure of what parses, PowerShell's words for what does not."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.errors import ParseError, format_parse_error
from proxyfleet.simulators.windows.powershell.parsing import parse


def only_pipeline(text: str) -> ast.Pipeline:
    block = parse(text)
    assert len(block.statements) == 1
    statement = block.statements[0]
    assert isinstance(statement, ast.Pipeline)
    return statement


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


def test_single_quoted_strings_double_the_quote_and_expand_nothing() -> None:
    expression = only_pipeline("'it''s $env:X `n'").elements[0]
    assert isinstance(expression, ast.CommandExpression)
    assert expression.expression == ast.StringConstant(expression.expression.extent,
                                                       "it's $env:X `n", "single")


def test_typographic_single_quotes_are_quotes_too() -> None:
    # PowerShell treats U+2019 as a single quote: quoting must double it as well.
    expression = only_pipeline("'a\u2019\u2019b'").elements[0]
    assert isinstance(expression, ast.CommandExpression)
    assert expression.expression.value == "a\u2019b"  # type: ignore[attr-defined]


def test_double_quoted_strings_expand_variables_subexpressions_and_backticks() -> None:
    expression = only_pipeline('"x=$x env=$env:HTTP_PROXY sub=$(1+2) tab=`t quote=""q"""').elements[0]
    assert isinstance(expression, ast.CommandExpression)
    string = expression.expression
    assert isinstance(string, ast.ExpandableString)
    kinds = [type(p).__name__ if not isinstance(p, str) else p for p in string.parts]
    assert kinds == ["x=", "Variable", " env=", "Variable", " sub=", "SubExpression",
                     ' tab=\t quote="q"']
    env = string.parts[3]
    assert isinstance(env, ast.Variable) and env.scope == "env" and env.name == "HTTP_PROXY"


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


def test_here_strings() -> None:
    expression = only_pipeline("@'\nline one\n'quoted' $x\n'@").elements[0]
    assert expression.expression.value == "line one\n'quoted' $x"  # type: ignore[union-attr]


def test_bareword_with_embedded_quotes_is_one_argument() -> None:
    command = only_pipeline("Write-Output a'b c'd").elements[0]
    assert isinstance(command, ast.Command)
    assert [e.value for e in command.elements] == ["ab cd"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("script", "message", "error_id", "column"), [
    ("echo 'abc", "The string is missing the terminator: '.", "TerminatorExpectedAtEndOfString", 6),
    ('echo "abc', 'The string is missing the terminator: ".', "TerminatorExpectedAtEndOfString", 6),
    ("if ($x) { 1", "Missing closing '}' in statement block or type definition.",
     "MissingEndCurlyBrace", 9),
    ("(1 + 2", "Missing closing ')' in expression.", "MissingEndParenthesisInExpression", 1),
    ("1 +", "You must provide a value expression following the '+' operator.",
     "ExpectedValueExpression", 4),
    ("if $x { }", "Missing '(' after 'if' in if statement.", "MissingOpenParenthesisInIfStatement", 4),
    ("a && b", "The token '&&' is not a valid statement separator in this version.",
     "InvalidEndOfLine", 3),
    ("a | 1", "Expressions are only allowed as the first element of a pipeline.",
     "ExpressionsMustBeFirstInPipeline", 5),
    ("a |", "An empty pipe element is not allowed.", "EmptyPipeElement", 3),
    ("$x = @{ a 1 }", "Missing '=' operator after key in hash literal.", "MissingEqualsInHashLiteral", 11),
    ("[Environment::X", "Missing ] at end of attribute or type literal.",
     "EndSquareBracketExpectedAtEndOfAttribute", 1),
    ("try { 1 }", "The Try statement is missing its Catch or Finally block.", "MissingCatchOrFinally", 10),
    ("'a' = 1", "The assignment expression is not valid. The input to an assignment operator must be "
     "an object that is able to accept assignments, such as a variable or a property.",
     "InvalidLeftHandSide", 1),
    ("while ($true) { }", "The 'while' statement is not supported by this Windows node simulator "
     "(see SUBSET.md).", "UnsupportedStatement", 1),
    ("1 }", "Unexpected token '}' in expression or statement.", "UnexpectedToken", 3),
])
def test_parse_errors_use_powershell_words(script: str, message: str, error_id: str, column: int) -> None:
    with pytest.raises(ParseError) as caught:
        parse(script)
    problem = caught.value.problems[0]
    assert (problem.message, problem.error_id) == (message, error_id)
    rendered = format_parse_error(caught.value)
    assert rendered.startswith(f"At line:1 char:{column}\n+ {script.splitlines()[0]}\n")
    assert f"FullyQualifiedErrorId : {error_id}" in rendered


def test_deep_nesting_is_refused_not_crashed() -> None:
    with pytest.raises(ParseError) as caught:
        parse("(" * 5000 + "1" + ")" * 5000)
    assert caught.value.problems[0].error_id == "ScriptTooDeeplyNested"
