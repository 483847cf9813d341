"""The parser's shared core: errors in PowerShell's own words (message, error id, column), and nesting refused before Python's recursion gives out."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.powershell.errors import ParseError, format_parse_error
from proxyfleet.simulators.windows.powershell.parsing import parse


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
