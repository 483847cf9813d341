"""The parser's scanning state and low-level helpers, shared by the statement parser
(``parsing``) and the expression parser (``expressions``)."""

from __future__ import annotations

from typing import NoReturn

from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.errors import ParseError, ParseProblem
from proxyfleet.simulators.windows.powershell.lexing import (
    NEWLINES,
    SPACES,
    is_dash,
    is_name_char,
)

MAX_NESTING = 100  # enter() calls; about 50 nested parentheses, well inside Python's stack


class ParserCore:
    """Scanning position, nesting depth and errors in PowerShell's words."""

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


    def _unexpected_token(self) -> NoReturn:
        end = self.pos + 1
        if is_name_char(self._peek()) or is_dash(self._peek()):
            end = self.pos + 1
            while end < len(self.text) and (is_name_char(self.text[end]) or self.text[end] in "-."):
                end += 1
        token = self.text[self.pos:end]
        self._fail(f"Unexpected token '{token}' in expression or statement.",
                   "UnexpectedToken", self.pos, end)


    # --- provided by the statement parser (``parsing.Parser``) ------------------------------

    def _statement_list(self, closer: str | None) -> ast.StatementBlock:
        raise NotImplementedError

    def _statement(self) -> ast.Statement:
        raise NotImplementedError
