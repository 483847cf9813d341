"""A recursive-descent parser for the PowerShell subset (see ``SUBSET.md``).

``parse(text)`` turns script text into a :class:`~.syntax.StatementBlock` or raises
:class:`~.errors.ParseError` carrying PowerShell 5.1's message and error id. Scanning is driven
by the parser because PowerShell tokenizes differently in expression and argument mode.
"""

from __future__ import annotations

import functools
import re
from typing import NoReturn

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.errors import ParseError, ParseProblem
from proxyfleet.simulators.windows.powershell.lexing import (
    BACKTICK_ESCAPES,
    DOUBLE_QUOTES,
    GENERIC_TERMINATORS,
    NEWLINES,
    SINGLE_QUOTES,
    SPACES,
    is_dash,
    is_name_char,
    operator_word,
    scan_number,
    scan_variable_name,
)

MAX_SCRIPT_LENGTH = 1 << 20  # far above Windows' 32,767-character command line
MAX_NESTING = 100  # enter() calls; about 50 nested parentheses, well inside Python's stack

_UNSUPPORTED_KEYWORDS = {
    "while", "for", "do", "switch", "function", "filter", "param", "trap", "break", "continue",
    "class", "enum", "using", "data", "workflow", "configuration", "dynamicparam", "begin",
    "process", "end",
}
_REDIRECTION = re.compile(r"([*1-6])?(>>?)(&[12])?")
_COMPARISON = {
    "-eq", "-ne", "-gt", "-ge", "-lt", "-le", "-like", "-notlike", "-match", "-notmatch",
    "-contains", "-notcontains", "-in", "-notin", "-replace", "-is", "-isnot", "-as",
    "-split", "-join",
}
_ASSIGNMENT = ("+=", "-=", "*=", "/=", "=")


_CACHED_TEXT = 64 * 1024


def parse(text: str) -> ast.StatementBlock:
    """Parse a whole script. The syntax tree is immutable, so a text seen before (a reconciler's
    script arrives at every node of a fleet) is parsed once."""
    if len(text) <= _CACHED_TEXT:
        return _parse_cached(text)
    return Parser(text).parse_script()


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str) -> ast.StatementBlock:
    return Parser(text).parse_script()


class Parser:
    """Parses one script text; not reusable."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    # --- low level ---------------------------------------------------------------------

    def _peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def _at_end(self) -> bool:
        return self.pos >= len(self.text)

    def _fail(self, message: str, error_id: str, start: int, end: int | None = None) -> NoReturn:
        raise ParseError(
            [ParseProblem(message, error_id, ast.Extent(start, end if end is not None else start + 1))],
            self.text,
        )

    def _skip(self, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in SPACES:
                self.pos += 1
            elif char == "`" and self._peek(1) in NEWLINES and self._peek(1) != "":
                self.pos += 2
                if text[self.pos - 1] == "\r" and self._peek() == "\n":
                    self.pos += 1
            elif char == "#":
                while self.pos < len(text) and text[self.pos] not in NEWLINES:
                    self.pos += 1
            elif char == "<" and self._peek(1) == "#":
                close = text.find("#>", self.pos + 2)
                if close == -1:
                    self._fail("Missing the terminator '#>' for the block comment.",
                               "MissingEndOfBlockComment", self.pos, len(text))
                self.pos = close + 2
            elif newlines and char in NEWLINES:
                self.pos += 1
            else:
                return

    def _statement_end(self) -> bool:
        char = self._peek()
        return char == "" or char in ";)}" or char in NEWLINES

    def _keyword(self) -> str:
        """The lower-cased keyword at the current position, or ''."""
        end = self.pos
        while end < len(self.text) and self.text[end].isalpha():
            end += 1
        if end == self.pos:
            return ""
        follow = self.text[end] if end < len(self.text) else ""
        if is_name_char(follow) or is_dash(follow) or (follow != "" and follow in ".\\/:"):
            return ""
        return self.text[self.pos:end].lower()

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self._fail("The script nests too deeply to be parsed.", "ScriptTooDeeplyNested", self.pos)

    # --- statements ----------------------------------------------------------------------

    def parse_script(self) -> ast.StatementBlock:
        if len(self.text) > MAX_SCRIPT_LENGTH:
            self._fail("The command line is too long.", "CommandLineTooLong", 0, 1)
        try:
            return self._statement_list(None)
        except RecursionError:
            self._fail("The script nests too deeply to be parsed.", "ScriptTooDeeplyNested", 0)

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

    def _unexpected_token(self) -> NoReturn:
        end = self.pos + 1
        if is_name_char(self._peek()) or is_dash(self._peek()):
            end = self.pos + 1
            while end < len(self.text) and (is_name_char(self.text[end]) or self.text[end] in "-."):
                end += 1
        token = self.text[self.pos:end]
        self._fail(f"Unexpected token '{token}' in expression or statement.",
                   "UnexpectedToken", self.pos, end)

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
        items = [self._argument_primary()]
        while True:
            save = self.pos
            self._skip(newlines=False)
            if self._peek() != ",":
                self.pos = save
                break
            self.pos += 1
            self._skip(newlines=True)
            if self._statement_end():
                self._fail("Missing expression after ','.", "MissingExpressionAfterToken", self.pos)
            items.append(self._argument_primary())
        if len(items) == 1:
            return items[0]
        return ast.ArrayLiteral(ast.Extent(start, self.pos), tuple(items))

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

    # --- strings --------------------------------------------------------------------------

    def _single_quoted(self) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in SINGLE_QUOTES:
                if self._peek(1) in SINGLE_QUOTES and self._peek(1) != "":
                    out.append(char)
                    self.pos += 2
                    continue
                self.pos += 1
                return "".join(out)
            out.append(char)
            self.pos += 1
        self._fail("The string is missing the terminator: '.", "TerminatorExpectedAtEndOfString",
                   start, len(text))

    def _double_quoted_parts(self) -> list[str | ast.Expr]:
        start = self.pos
        self.pos += 1
        parts: list[str | ast.Expr] = []
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in DOUBLE_QUOTES:
                if self._peek(1) in DOUBLE_QUOTES and self._peek(1) != "":
                    parts.append(char)
                    self.pos += 2
                    continue
                self.pos += 1
                return _merge_text(parts)
            if char == "`" and self.pos + 1 < len(text):
                follow = text[self.pos + 1]
                parts.append(BACKTICK_ESCAPES.get(follow, follow))
                self.pos += 2
            elif char == "$":
                parts.append(self._dollar_part())
            else:
                parts.append(char)
                self.pos += 1
        self._fail('The string is missing the terminator: ".', "TerminatorExpectedAtEndOfString",
                   start, len(text))

    def _dollar_part(self) -> str | ast.Expr:
        """Inside an expandable string: ``$var``, ``$env:X``, ``$(...)`` or a literal ``$``."""
        start = self.pos
        if self._peek(1) == "(":
            return self._subexpression()
        scanned = scan_variable_name(self.text, self.pos)
        if scanned is None:
            self.pos += 1
            return "$"
        scope, name, end = scanned
        self.pos = end
        return ast.Variable(ast.Extent(start, end), name, scope)

    def _subexpression(self) -> ast.Expr:
        start = self.pos
        self.pos += 2
        body = self._statement_list(")")
        if self._peek() != ")":
            self._fail("Missing closing ')' in subexpression.", "MissingEndParenthesisInSubexpression",
                       start, start + 2)
        self.pos += 1
        return ast.SubExpression(ast.Extent(start, self.pos), body)

    def _here_string(self) -> ast.Expr:
        start = self.pos
        quote = self._peek(1)
        self.pos += 2
        while self._peek() in SPACES and self._peek() != "":
            self.pos += 1
        if self._peek() == "\r":
            self.pos += 1
        if self._peek() != "\n":
            self._fail("No characters are allowed after a here-string header but before the end "
                       "of the line.", "UnexpectedCharactersAfterHereStringHeader", self.pos)
        self.pos += 1
        body_start = self.pos
        terminator = re.compile(r"\r?\n" + re.escape(quote) + "@")
        match = terminator.search(self.text, self.pos)
        if match is None:
            self._fail(f"The string is missing the terminator: {quote}@.",
                       "TerminatorExpectedAtEndOfString", start, len(self.text))
        body = self.text[body_start:match.start()]
        self.pos = match.end()
        extent = ast.Extent(start, self.pos)
        if quote in SINGLE_QUOTES:
            return ast.StringConstant(extent, body, "single")
        inner = Parser(self.text)
        inner.pos = body_start
        parts: list[str | ast.Expr] = []
        while inner.pos < match.start():
            char = inner.text[inner.pos]
            if char == "`" and inner.pos + 1 < match.start():
                follow = inner.text[inner.pos + 1]
                parts.append(BACKTICK_ESCAPES.get(follow, follow))
                inner.pos += 2
            elif char == "$":
                parts.append(inner._dollar_part())
            else:
                parts.append(char)
                inner.pos += 1
        return _string_node(extent, _merge_text(parts), "double")

    # --- expressions ----------------------------------------------------------------------

    def _expression(self, comma: bool = True) -> ast.Expr:
        self._enter()
        try:
            return self._binary(0, comma)
        finally:
            self.depth -= 1

    _LEVELS: tuple[frozenset[str], ...] = (
        frozenset({"-and", "-or", "-xor"}),
        frozenset({"-band", "-bor", "-bxor"}),
        frozenset(_COMPARISON),
        frozenset({"+", "-"}),
        frozenset({"*", "/", "%"}),
        frozenset({"-f"}),
        frozenset({".."}),
    )

    def _binary(self, level: int, comma: bool) -> ast.Expr:
        if level == len(self._LEVELS):
            return self._array(comma)
        start = self.pos
        left = self._binary(level + 1, comma)
        while True:
            save = self.pos
            self._skip(newlines=False)
            operator = self._binary_operator()
            if operator is None or _base(_normalise(operator)) not in self._LEVELS[level]:
                self.pos = save
                return left
            self.pos += len(operator)
            self._skip(newlines=True)
            if self._statement_end() or self._peek() == "|":
                self._fail(f"You must provide a value expression following the '{operator}' "
                           "operator.", "ExpectedValueExpression", self.pos)
            right = self._binary(level + 1, comma)
            left = ast.Binary(ast.Extent(start, self.pos), _normalise(operator), left, right)
            if level == len(self._LEVELS) - 1:
                return left

    def _binary_operator(self) -> str | None:
        char = self._peek()
        if is_dash(char):
            word = operator_word(self.text, self.pos)
            if word is not None:
                return self.text[self.pos:word[1]]
            if self._peek(1) == "=" or self._peek(1).isalpha():
                return None
            return char
        if char in "+*/%" and char != "" and self._peek(1) != "=":
            return char
        if self.text.startswith("..", self.pos):
            return ".."
        return None

    def _array(self, comma: bool) -> ast.Expr:
        start = self.pos
        first = self._unary()
        if not comma:
            return first
        items = [first]
        while True:
            save = self.pos
            self._skip(newlines=False)
            if self._peek() != ",":
                self.pos = save
                break
            self.pos += 1
            self._skip(newlines=True)
            if self._statement_end():
                self._fail("Missing expression after ','.", "MissingExpressionAfterToken", self.pos)
            items.append(self._unary())
        if len(items) == 1:
            return first
        return ast.ArrayLiteral(ast.Extent(start, self.pos), tuple(items))

    def _unary(self) -> ast.Expr:
        start = self.pos
        char = self._peek()
        operator = None
        if is_dash(char):
            word = operator_word(self.text, self.pos)
            if word is not None and word[0] in ("-not", "-join", "-split", "-bnot"):
                operator, self.pos = word[0], word[1]
            elif word is None and not self._peek(1).isalpha():
                operator = "-"
                self.pos += 1
            elif word is None:
                end = self.pos + 1
                while end < len(self.text) and is_name_char(self.text[end]):
                    end += 1
                self._fail("Missing expression after unary operator '-'.",
                           "MissingExpressionAfterOperator", self.pos, end)
        elif char in "!+" and char != "":
            operator = char
            self.pos += 1
        if operator is None:
            return self._cast()
        self._skip(newlines=False)
        if self._statement_end() or self._peek() == "|":
            self._fail(f"Missing expression after unary operator '{operator}'.",
                       "MissingExpressionAfterOperator", self.pos)
        operand = self._unary()
        if operator == "-" and isinstance(operand, ast.NumberConstant):
            return ast.NumberConstant(ast.Extent(start, self.pos), -operand.value)
        return ast.Unary(ast.Extent(start, self.pos), operator, operand)

    def _cast(self) -> ast.Expr:
        start = self.pos
        if self._peek() != "[":
            return self._postfix(self._primary())
        type_name = self._type_name()
        type_expr: ast.Expr = ast.TypeLiteral(ast.Extent(start, self.pos), type_name)
        if self.text.startswith("::", self.pos) or self._peek() in ".[":
            return self._postfix(type_expr)
        save = self.pos
        self._skip(newlines=False)
        char = self._peek()
        if char != "" and (char in "$'\"([@" or char in SINGLE_QUOTES + DOUBLE_QUOTES
                           or char.isdigit() or is_dash(char) or char == "!"):
            if type_name.lower() == "ordered" and char == "@":
                table = self._primary()
                if isinstance(table, ast.HashtableLiteral):
                    return ast.HashtableLiteral(ast.Extent(start, self.pos), table.pairs, True)
            return ast.Convert(ast.Extent(start, self.pos), type_name, self._unary())
        self.pos = save
        return type_expr

    def _type_name(self) -> str:
        start = self.pos
        self.pos += 1
        depth = 1
        while self.pos < len(self.text) and depth:
            char = self.text[self.pos]
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif char in NEWLINES:
                break
            self.pos += 1
        if depth:
            self._fail("Missing ] at end of attribute or type literal.",
                       "EndSquareBracketExpectedAtEndOfAttribute", start, self.pos)
        name = self.text[start + 1:self.pos - 1].strip()
        if not name:
            self._fail("Missing type name after '['.", "MissingTypename", start + 1)
        return name

    def _postfix(self, target: ast.Expr) -> ast.Expr:
        start = target.extent.start
        while True:
            if self.text.startswith("::", self.pos) or (
                    self._peek() == "." and self._peek(1) != "."):
                static = self._peek() == ":"
                self.pos += 2 if static else 1
                member = self._member_name()
                if self._peek() == "(":
                    arguments = self._call_arguments()
                    target = ast.InvokeMember(ast.Extent(start, self.pos), target, member,
                                              arguments, static)
                else:
                    target = ast.Member(ast.Extent(start, self.pos), target, member, static)
            elif self._peek() == "[":
                open_at = self.pos
                self.pos += 1
                self._skip(newlines=True)
                if self._peek() == "]":
                    self._fail("Array index expression is missing or not valid.",
                               "MissingArrayIndexExpression", self.pos)
                index = self._expression()
                self._skip(newlines=True)
                if self._peek() != "]":
                    self._fail("Missing ']' after array index expression.",
                               "MissingEndSquareBracket", open_at)
                self.pos += 1
                target = ast.Index(ast.Extent(start, self.pos), target, index)
            else:
                return target

    def _member_name(self) -> ast.Expr:
        start = self.pos
        char = self._peek()
        if char != "" and (char in SINGLE_QUOTES or char in DOUBLE_QUOTES or char in "$("):
            return self._primary()
        end = self.pos
        while end < len(self.text) and is_name_char(self.text[end]):
            end += 1
        if end == self.pos:
            self._fail("Missing property name after reference operator.", "MissingPropertyName",
                       self.pos)
        self.pos = end
        return ast.StringConstant(ast.Extent(start, end), self.text[start:end], "bare")

    def _call_arguments(self) -> tuple[ast.Expr, ...]:
        open_at = self.pos
        self.pos += 1
        arguments: list[ast.Expr] = []
        self._skip(newlines=True)
        if self._peek() == ")":
            self.pos += 1
            return ()
        while True:
            self._skip(newlines=True)
            if self._peek() in (")", ""):
                self._fail("Missing argument in parameter list.", "MissingArgument", self.pos)
            arguments.append(self._expression(comma=False))
            self._skip(newlines=True)
            if self._peek() == ",":
                self.pos += 1
                continue
            if self._peek() == ")":
                self.pos += 1
                return tuple(arguments)
            self._fail("Missing ')' in method call.", "MissingEndParenthesisInMethodCall", open_at)

    def _primary(self) -> ast.Expr:
        start = self.pos
        char = self._peek()
        if char == "$":
            if self._peek(1) == "(":
                return self._subexpression()
            scanned = scan_variable_name(self.text, self.pos)
            if scanned is None:
                self._fail("Variable reference is not valid. '$' was not followed by a valid "
                           "variable name character. Consider using ${} to delimit the name.",
                           "InvalidVariableReference", self.pos)
            scope, name, end = scanned
            self.pos = end
            return ast.Variable(ast.Extent(start, end), name, scope)
        if char in SINGLE_QUOTES:
            value = self._single_quoted()
            return ast.StringConstant(ast.Extent(start, self.pos), value, "single")
        if char in DOUBLE_QUOTES:
            parts = self._double_quoted_parts()
            return _string_node(ast.Extent(start, self.pos), parts, "double")
        if char == "@":
            follow = self._peek(1)
            if follow in SINGLE_QUOTES + DOUBLE_QUOTES and follow != "":
                return self._here_string()
            if follow == "(":
                self.pos += 2
                body = self._statement_list(")")
                if self._peek() != ")":
                    self._fail("Missing closing ')' in subexpression.",
                               "MissingEndParenthesisInSubexpression", start, start + 2)
                self.pos += 1
                return ast.ArrayExpression(ast.Extent(start, self.pos), body)
            if follow == "{":
                return self._hashtable()
        if char == "(":
            self.pos += 1
            self._skip(newlines=True)
            if self._peek() == ")":
                self._fail("An expression was expected after '('.", "ExpectedExpression", self.pos)
            pipeline = self._statement()
            self._skip(newlines=True)
            if self._peek() != ")":
                self._fail("Missing closing ')' in expression.",
                           "MissingEndParenthesisInExpression", start)
            self.pos += 1
            return ast.ParenExpression(ast.Extent(start, self.pos), pipeline)
        if char == "{":
            self.pos += 1
            body = self._statement_list("}")
            if self._peek() != "}":
                self._fail("Missing closing '}' in statement block or type definition.",
                           "MissingEndCurlyBrace", start)
            self.pos += 1
            return ast.ScriptBlockLiteral(ast.Extent(start, self.pos), body,
                                          self.text[start + 1:self.pos - 1])
        if char == "[":
            return self._cast()
        number = scan_number(self.text, self.pos) if char.isdigit() or char == "." else None
        if number is not None:
            self.pos = number[1]
            return ast.NumberConstant(ast.Extent(start, self.pos), number[0])
        if char == "" or char in NEWLINES or char in ";)}|":
            self._fail("You must provide a value expression on the right-hand side of the "
                       "operator.", "ExpectedValueExpression", self.pos)
        self._unexpected_token()

    def _hashtable(self) -> ast.Expr:
        start = self.pos
        self.pos += 2
        pairs: list[tuple[ast.Expr, ast.Statement]] = []
        while True:
            self._skip(newlines=True)
            while self._peek() == ";":
                self.pos += 1
                self._skip(newlines=True)
            if self._peek() == "}":
                self.pos += 1
                return ast.HashtableLiteral(ast.Extent(start, self.pos), tuple(pairs))
            if self._at_end():
                self._fail("The hash literal was incomplete.", "IncompleteHashLiteral", start)
            key_start = self.pos
            if self._peek() in SINGLE_QUOTES + DOUBLE_QUOTES or self._peek() in "$(":
                key = self._unary()
            else:
                end = self.pos
                while end < len(self.text) and (is_name_char(self.text[end]) or self.text[end] in "-."):
                    end += 1
                if end == self.pos:
                    self._unexpected_token()
                number = scan_number(self.text, self.pos)
                self.pos = end
                if number is not None and number[1] == end:
                    key = ast.NumberConstant(ast.Extent(key_start, end), number[0])
                else:
                    key = ast.StringConstant(ast.Extent(key_start, end), self.text[key_start:end],
                                             "bare")
            self._skip(newlines=False)
            if self._peek() != "=":
                self._fail("Missing '=' operator after key in hash literal.",
                           "MissingEqualsInHashLiteral", self.pos)
            self.pos += 1
            self._skip(newlines=True)
            if self._statement_end():
                self._fail("Missing statement after '=' in hash literal.",
                           "MissingStatementInHashLiteral", self.pos)
            pairs.append((key, self._statement()))
            self._skip(newlines=False)
            if self._peek() not in ";}" and self._peek() not in NEWLINES:
                self._fail("Missing '=' operator after key in hash literal."
                           if self._peek() == "" else
                           f"Unexpected token '{self._peek()}' in expression or statement.",
                           "UnexpectedToken", self.pos)


def _normalise(operator: str) -> str:
    """Lower-case, map typographic dashes to '-', and drop the case-insensitive 'i' prefix."""
    if is_dash(operator[0]):
        operator = "-" + operator[1:].lower()
        if operator.startswith("-i") and operator[2:] and ("-" + operator[2:]) in _COMPARISON:
            return "-" + operator[2:]
    return operator


def _base(operator: str) -> str:
    """The case-insensitive family of an operator: ``-ceq`` belongs with ``-eq``."""
    if operator.startswith("-c") and ("-" + operator[2:]) in _COMPARISON:
        return "-" + operator[2:]
    return operator


def _merge_text(parts: list[str | ast.Expr]) -> list[str | ast.Expr]:
    merged: list[str | ast.Expr] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] = merged[-1] + part
        else:
            merged.append(part)
    return merged


def _string_node(extent: ast.Extent, parts: list[str | ast.Expr], quote: str) -> ast.Expr:
    if all(isinstance(part, str) for part in parts):
        return ast.StringConstant(extent, "".join(p for p in parts if isinstance(p, str)), quote)
    return ast.ExpandableString(extent, tuple(parts), quote)
