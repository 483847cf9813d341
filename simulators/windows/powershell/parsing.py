"""A recursive-descent parser for the PowerShell subset (see ``SUBSET.md``).

``parse(text)`` turns script text into a :class:`~.syntax.StatementBlock` or raises
:class:`~.errors.ParseError` carrying PowerShell 5.1's message and error id. Scanning is driven
by the parser because PowerShell tokenizes differently in expression and argument mode.
"""

from __future__ import annotations

import functools
import re

from proxyfleet.core.powershell import DOUBLE_QUOTES, SINGLE_QUOTES
from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.expressions import ExpressionParser, _merge_text
from proxyfleet.simulators.windows.powershell.lexing import (
    GENERIC_TERMINATORS,
    NEWLINES,
    is_dash,
    scan_number,
    scan_variable_name,
)
from proxyfleet.simulators.windows.powershell.tailcache import FIRST_STATEMENTS, StatementTails

MAX_SCRIPT_LENGTH = 1 << 20  # far above Windows' 32,767-character command line

_UNSUPPORTED_KEYWORDS = {
    "while", "for", "do", "switch", "function", "filter", "param", "trap", "break", "continue",
    "class", "enum", "using", "data", "workflow", "configuration", "dynamicparam", "begin",
    "process", "end",
}
_REDIRECTION = re.compile(r"([*1-6])?(>>?)(&[12])?")
_ASSIGNMENT = ("+=", "-=", "*=", "/=", "=")


_CACHED_TEXT = 64 * 1024


# Top-level statements of scripts that parsed, found again at the end of new texts.
TAILS = StatementTails()


def parse(text: str) -> ast.StatementBlock:
    """Parse a whole script. The syntax tree is immutable, so a text seen before (a reconciler's
    script arrives at every node of a fleet) is parsed once, and so is a body seen before behind a
    prologue of its own (a data file's random name): ``tailcache``."""
    if len(text) <= _CACHED_TEXT:
        return _parse_cached(text)
    return Parser(text).parse_script()


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str) -> ast.StatementBlock:
    return Parser(text, TAILS).parse_script()


class Parser(ExpressionParser):
    """Parses one script text; not reusable. With ``tails``, the script's top-level statements
    are looked up there, and kept there once the whole script has parsed."""

    def __init__(self, text: str, tails: StatementTails | None = None) -> None:
        super().__init__(text)
        self.tails = tails
        self.tail_starts: list[int] = []  # where top-level statements began that no tail served

    # --- statements ----------------------------------------------------------------------

    def parse_script(self) -> ast.StatementBlock:
        if len(self.text) > MAX_SCRIPT_LENGTH:
            self._fail("The command line is too long.", "CommandLineTooLong", 0, 1)
        try:
            block = self._statement_list(None)
        except RecursionError:
            self._fail("The script nests too deeply to be parsed.", "ScriptTooDeeplyNested", 0)
        if self.tails is not None:
            self.tails.remember(self.text, self.tail_starts, block.statements)
        return block

    def _known_tail(self, tails: StatementTails) -> tuple[ast.Statement, ...] | None:
        """The top-level statements from here to the end, if ``tails`` has them (looked for behind
        the script's first ``FIRST_STATEMENTS`` only)."""
        if len(self.tail_starts) >= FIRST_STATEMENTS:
            return None
        found = tails.find(self.text, self.pos)
        if found is None:
            self.tail_starts.append(self.pos)
        return found

    def _statement_list(self, closer: str | None) -> ast.StatementBlock:
        start = self.pos
        statements: list[ast.Statement] = []
        while True:
            self._skip(newlines=True)
            char = self._peek()
            if char == "":
                break
            if char == ";":
                self.pos += 1
                continue
            if closer is not None and char == closer:
                break
            if char in ")}":
                self._fail(f"Unexpected token '{char}' in expression or statement.",
                           "UnexpectedToken", self.pos)
            # Only the script's own list has no closer: its statements are the top-level ones.
            tail = self._known_tail(self.tails) if closer is None and self.tails is not None else None
            if tail is not None:  # the rest of the script, as parsed before: it ends the text
                statements.extend(tail)
                self.pos = len(self.text)
                break
            statements.append(self._statement())
            self._skip(newlines=False)
            char = self._peek()
            if char == "" or char in ";" or char in NEWLINES or (closer and char == closer):
                continue
            if self.text.startswith(("&&", "||"), self.pos):
                token = self.text[self.pos:self.pos + 2]
                self._fail(f"The token '{token}' is not a valid statement separator in this version.",
                           "InvalidEndOfLine", self.pos, self.pos + 2)
            self._unexpected_token()
        return ast.StatementBlock(tuple(statements), ast.Extent(start, self.pos))

    def _statement(self) -> ast.Statement:
        self._enter()
        try:
            keyword = self._keyword()
            if keyword == "if":
                return self._if_statement()
            if keyword == "foreach":
                return self._foreach_statement()
            if keyword == "try":
                return self._try_statement()
            if keyword in ("throw", "exit", "return"):
                return self._flow_statement(keyword)
            if keyword in _UNSUPPORTED_KEYWORDS:
                self._fail(f"The '{keyword}' statement is not supported by this Windows node "
                           "simulator (see SUBSET.md).", "UnsupportedStatement",
                           self.pos, self.pos + len(keyword))
            return self._pipeline()
        finally:
            self.depth -= 1

    def _block(self, message: str, error_id: str) -> ast.StatementBlock:
        self._skip(newlines=True)
        if self._peek() != "{":
            self._fail(message, error_id, self.pos)
        open_at = self.pos
        self.pos += 1
        block = self._statement_list("}")
        if self._peek() != "}":
            self._fail("Missing closing '}' in statement block or type definition.",
                       "MissingEndCurlyBrace", open_at)
        self.pos += 1
        return block

    def _condition(self, keyword: str) -> ast.Statement:
        self._skip(newlines=True)
        if self._peek() != "(":
            self._fail(f"Missing '(' after '{keyword}' in {keyword} statement.",
                       "MissingOpenParenthesisInIfStatement", self.pos)
        self.pos += 1
        self._skip(newlines=True)
        if self._peek() == ")":
            self._fail(f"Missing condition in if statement after '{keyword} ('.",
                       "IfStatementMissingCondition", self.pos)
        condition = self._pipeline()
        self._skip(newlines=True)
        if self._peek() != ")":
            self._fail(f"Missing closing ')' after expression in '{keyword}' statement.",
                       "MissingEndParenthesisAfterStatement", self.pos)
        self.pos += 1
        return condition

    def _if_statement(self) -> ast.Statement:
        start = self.pos
        self.pos += 2
        clauses = [(self._condition("if"),
                    self._block("Missing statement block after if ( condition ).",
                                "MissingStatementBlock"))]
        else_block = None
        while True:
            save = self.pos
            self._skip(newlines=True)
            keyword = self._keyword()
            if keyword == "elseif":
                self.pos += 6
                clauses.append((self._condition("elseif"),
                                self._block("Missing statement block after elseif ( condition ).",
                                            "MissingStatementBlock")))
            elif keyword == "else":
                self.pos += 4
                else_block = self._block("Missing statement block after 'else' keyword.",
                                         "MissingStatementBlockAfterElse")
                break
            else:
                self.pos = save
                break
        return ast.IfStatement(ast.Extent(start, self.pos), tuple(clauses), else_block)

    def _foreach_statement(self) -> ast.Statement:
        start = self.pos
        self.pos += 7
        self._skip(newlines=True)
        if self._peek() != "(":
            self._fail("Missing opening '(' after keyword 'foreach'.",
                       "MissingOpenParenthesisAfterKeyword", self.pos)
        self.pos += 1
        self._skip(newlines=True)
        scanned = scan_variable_name(self.text, self.pos) if self._peek() == "$" else None
        if scanned is None:
            self._fail("Missing variable name after foreach.", "MissingVariableNameAfterForeach",
                       self.pos)
        self.pos = scanned[2]
        self._skip(newlines=True)
        if self._keyword() != "in":
            self._fail("Missing 'in' after variable in foreach loop.", "MissingInInForeach", self.pos)
        self.pos += 2
        self._skip(newlines=True)
        iterable = self._pipeline()
        self._skip(newlines=True)
        if self._peek() != ")":
            self._fail("Missing closing ')' after expression in 'foreach' statement.",
                       "MissingEndParenthesisAfterForeach", self.pos)
        self.pos += 1
        body = self._block("Missing statement body in foreach loop.", "MissingForeachStatement")
        return ast.ForEachStatement(ast.Extent(start, self.pos), scanned[1], iterable, body)

    def _try_statement(self) -> ast.Statement:
        start = self.pos
        self.pos += 3
        body = self._block("Missing statement block after 'try'.", "MissingTryStatementBlock")
        catches: list[ast.CatchClause] = []
        finally_block = None
        while True:
            save = self.pos
            self._skip(newlines=True)
            keyword = self._keyword()
            if keyword == "catch" and finally_block is None:
                self.pos += 5
                types: list[str] = []
                while True:
                    self._skip(newlines=True)
                    if self._peek() != "[":
                        break
                    types.append(self._type_name())
                    self._skip(newlines=True)
                    if self._peek() == ",":
                        self.pos += 1
                catches.append(ast.CatchClause(
                    tuple(types),
                    self._block("Missing statement block in catch block.", "MissingCatchBlock")))
            elif keyword == "finally" and finally_block is None:
                self.pos += 7
                finally_block = self._block("Missing statement block in finally block.",
                                            "MissingFinallyStatementBlock")
            else:
                self.pos = save
                break
        if not catches and finally_block is None:
            self._fail("The Try statement is missing its Catch or Finally block.",
                       "MissingCatchOrFinally", self.pos)
        return ast.TryStatement(ast.Extent(start, self.pos), body, tuple(catches), finally_block)

    def _flow_statement(self, keyword: str) -> ast.Statement:
        start = self.pos
        self.pos += len(keyword)
        self._skip(newlines=False)
        value = None if self._statement_end() else self._pipeline()
        return ast.FlowStatement(ast.Extent(start, self.pos), keyword, value)

    # --- pipelines and commands ------------------------------------------------------------

    def _pipeline(self) -> ast.Statement:
        start = self.pos
        first = self._pipeline_element(first=True)
        if isinstance(first, ast.CommandExpression) and not first.redirections:
            self._skip(newlines=False)
            operator = next((op for op in _ASSIGNMENT if self.text.startswith(op, self.pos)), None)
            if operator is not None:
                target = first.expression
                if not isinstance(target, ast.Variable | ast.Member | ast.Index | ast.Convert):
                    self._fail(
                        "The assignment expression is not valid. The input to an assignment "
                        "operator must be an object that is able to accept assignments, such as "
                        "a variable or a property.", "InvalidLeftHandSide",
                        target.extent.start, target.extent.end)
                self.pos += len(operator)
                self._skip(newlines=True)
                if self._statement_end():
                    self._fail(f"You must provide a value expression following the '{operator}' "
                               "operator.", "ExpectedValueExpression", self.pos)
                value = self._statement()
                return ast.Assignment(ast.Extent(start, self.pos), target, operator, value)
        elements = [first]
        while True:
            self._skip(newlines=False)
            if self._peek() == "|" and self._peek(1) != "|":
                bar = self.pos
                self.pos += 1
                self._skip(newlines=True)
                if self._statement_end() or self._peek() == "|":
                    self._fail("An empty pipe element is not allowed.", "EmptyPipeElement", bar)
                elements.append(self._pipeline_element(first=False))
            else:
                break
        return ast.Pipeline(ast.Extent(start, self.pos), tuple(elements))

    def _starts_command(self) -> bool:
        char = self._peek()
        if char == "" or char in "$'\"(@[{!,+" or char in SINGLE_QUOTES + DOUBLE_QUOTES:
            return False
        if is_dash(char):
            return False
        if char == ".":
            return self._peek(1) in ("\\", "/", ".")
        if char.isdigit():
            number = scan_number(self.text, self.pos)
            if number is not None:
                follow = self.text[number[1]] if number[1] < len(self.text) else ""
                return not (follow == "" or follow in GENERIC_TERMINATORS or follow in "+-*/%.,=]")
        return True

    def _pipeline_element(self, first: bool) -> ast.Command | ast.CommandExpression:
        start = self.pos
        if self._peek() == "&" and self._peek(1) != "&":
            self.pos += 1
            self._skip(newlines=False)
            if self._statement_end():
                self._fail("Missing expression after '&' in pipeline element.",
                           "MissingExpression", self.pos)
            name = self._argument_primary()
            return self._command_rest(start, name, "&")
        if self._starts_command():
            name_start = self.pos
            name_text = self._generic_text(command_name=True)
            name = ast.StringConstant(ast.Extent(name_start, self.pos), name_text, "bare")
            return self._command_rest(start, name, "")
        if not first:
            self._fail("Expressions are only allowed as the first element of a pipeline.",
                       "ExpressionsMustBeFirstInPipeline", self.pos)
        expression = self._expression()
        redirections = self._redirections()
        return ast.CommandExpression(ast.Extent(start, self.pos), expression, redirections)

    def _redirections(self) -> tuple[ast.Redirection, ...]:
        found: list[ast.Redirection] = []
        while True:
            save = self.pos
            self._skip(newlines=False)
            redirection = self._redirection()
            if redirection is None:
                self.pos = save
                return tuple(found)
            found.append(redirection)

    def _redirection(self) -> ast.Redirection | None:
        if self._peek() == "<":
            self._fail("The '<' operator is reserved for future use.", "RedirectionNotSupported",
                       self.pos)
        match = _REDIRECTION.match(self.text, self.pos)
        if match is None:
            return None
        start = self.pos
        self.pos = match.end()
        stream = match.group(1) or "1"
        append = match.group(2) == ">>"
        if match.group(3):
            return ast.Redirection(stream, None, append, ast.Extent(start, self.pos))
        self._skip(newlines=False)
        if self._statement_end() or self._peek() == "|":
            self._fail("Missing file specification after redirection operator.",
                       "MissingFileSpecification", start, self.pos)
        target = self._argument_primary()
        return ast.Redirection(stream, target, append, ast.Extent(start, self.pos))

    def _command_rest(self, start: int, name: ast.Expr, invocation: str) -> ast.Command:
        elements: list[ast.CommandParameter | ast.Expr] = []
        redirections: list[ast.Redirection] = []
        while True:
            self._skip(newlines=False)
            char = self._peek()
            if char == "" or char in ";|)}" or char in NEWLINES:
                break
            if char == "&":
                if self._peek(1) == "&":
                    break
                self._fail("The ampersand (&) character is not allowed. The & operator is reserved "
                           "for future use; wrap an ampersand in double quotation marks (\"&\") to "
                           "pass it as part of a string.", "AmpersandNotAllowed", self.pos)
            redirection = self._redirection()
            if redirection is not None:
                redirections.append(redirection)
                continue
            if is_dash(char) and (self._peek(1).isalpha() or self._peek(1) in "_?"):
                elements.append(self._parameter())
            else:
                elements.append(self._argument())
        return ast.Command(ast.Extent(start, self.pos), name, tuple(elements), invocation,
                           tuple(redirections))

    def _parameter(self) -> ast.CommandParameter:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos] not in GENERIC_TERMINATORS \
                and self.text[self.pos] != ":":
            self.pos += 1
        name = self.text[start + 1:self.pos]
        argument = None
        if self._peek() == ":":
            self.pos += 1
            self._skip(newlines=False)
            if self._statement_end():
                self._fail(f"Missing an argument for parameter '{name}'.", "MissingArgument",
                           start, self.pos)
            argument = self._argument()
        return ast.CommandParameter(name, argument, ast.Extent(start, self.pos),
                                    self.text[start:self.pos])

    # --- argument mode -------------------------------------------------------------------

    def _argument(self) -> ast.Expr:
        start = self.pos
        return self._comma_list(start, self._argument_primary(), self._argument_primary)

    def _argument_primary(self) -> ast.Expr:
        start = self.pos
        char = self._peek()
        if char in SINGLE_QUOTES or char in DOUBLE_QUOTES or char == "{":
            return self._primary()
        if char == "@" and self._peek(1) in "({'\"":
            return self._postfix(self._primary())
        if char == "(" or (char == "$" and self._peek(1) == "("):
            return self._postfix(self._primary())
        if char == "$":
            scanned = scan_variable_name(self.text, self.pos)
            if scanned is not None:
                expression = self._postfix(self._primary())
                follow = self._peek()
                if follow == "" or follow in GENERIC_TERMINATORS or follow == ",":
                    return expression
                self.pos = start  # e.g. $dir\file: an expandable bareword
        return self._generic_argument()

    def _generic_argument(self) -> ast.Expr:
        start = self.pos
        parts = self._generic_parts()
        extent = ast.Extent(start, self.pos)
        if all(isinstance(part, str) for part in parts):
            value = "".join(part for part in parts if isinstance(part, str))
            number = scan_number(value, 1 if value[:1] in "-+" and len(value) > 1 else 0)
            if value and number is not None and number[1] == len(value) and value[:1] != "+":
                sign = -1 if value[0] == "-" else 1
                return ast.NumberConstant(extent, sign * number[0])
            return ast.StringConstant(extent, value, "bare")
        return ast.ExpandableString(extent, tuple(parts), "bare")

    def _generic_text(self, command_name: bool) -> str:
        parts = self._generic_parts(expand=not command_name)
        return "".join(part for part in parts if isinstance(part, str))

    def _generic_parts(self, expand: bool = True) -> list[str | ast.Expr]:
        parts: list[str | ast.Expr] = []
        text = self.text
        start = self.pos
        while self.pos < len(text):
            char = text[self.pos]
            if char in GENERIC_TERMINATORS or char == ",":
                break
            if char == "`":
                follow = self._peek(1)
                if follow == "" or follow in NEWLINES:
                    break
                parts.append(follow)
                self.pos += 2
            elif char in SINGLE_QUOTES:
                parts.append(self._single_quoted())
            elif char in DOUBLE_QUOTES:
                parts.extend(self._double_quoted_parts())
            elif char == "$" and expand:
                parts.append(self._dollar_part())
            else:
                parts.append(char)
                self.pos += 1
        if self.pos == start:
            self._unexpected_token()
        return _merge_text(parts)

