"""The tokenizer: quoting rules (single, typographic, double with expansion, here-strings) and barewords."""

from __future__ import annotations

from proxyfleet.simulators.windows.powershell import syntax as ast
from tests.simulators.windows.powershell.scripts import only_pipeline


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


def test_here_strings() -> None:
    expression = only_pipeline("@'\nline one\n'quoted' $x\n'@").elements[0]
    assert expression.expression.value == "line one\n'quoted' $x"  # type: ignore[union-attr]


def test_bareword_with_embedded_quotes_is_one_argument() -> None:
    command = only_pipeline("Write-Output a'b c'd").elements[0]
    assert isinstance(command, ast.Command)
    assert [e.value for e in command.elements] == ["ab cd"]  # type: ignore[union-attr]
