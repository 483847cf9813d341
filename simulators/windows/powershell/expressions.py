"""Expression mode of the PowerShell subset's parser: strings (quoted, expandable, here-strings),
operators by precedence, casts, members, calls, literals, arrays and hashtables."""

from __future__ import annotations

import re
from collections.abc import Callable

from proxyfleet.core.powershell import DOUBLE_QUOTES, SINGLE_QUOTES
from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.lexing import (
    BACKTICK_ESCAPES,
    NEWLINES,
    SPACES,
    is_dash,
    is_name_char,
    operator_word,
    scan_number,
    scan_variable_name,
)
from proxyfleet.simulators.windows.powershell.parsercore import ParserCore

_COMPARISON = {
    "-eq", "-ne", "-gt", "-ge", "-lt", "-le", "-like", "-notlike", "-match", "-notmatch",
    "-contains", "-notcontains", "-in", "-notin", "-replace", "-is", "-isnot", "-as",
    "-split", "-join",
}


class ExpressionParser(ParserCore):
    """Expressions and strings; statements come from the subclass."""

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
        inner = type(self)(self.text)  # the same parser class, positioned inside the here-string
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
        return self._comma_list(start, first, self._unary)

    def _comma_list(self, start: int, first: ast.Expr, item: Callable[[], ast.Expr]) -> ast.Expr:
        """``first`` alone, or ``first, item, item…`` as an array (in expression and argument mode)."""
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
            items.append(item())
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
