"""Top-level statements already parsed, found again by the text that ends a new script.

A reconciler's script often carries a short prologue of its own per call (the name of the data
file it loads is random) in front of a body every node of the fleet gets, so the whole text is
new each time while most of it is not. Between two top-level statements the parser's only state
is its position: the statements from position ``p`` to the end of a text are the same in every
text with the same characters from ``p`` on and the same length — their extents included, so
errors still point at the right line and character. Only a tail whose whole script parsed is
remembered, so a tail found again parses (and would have failed) exactly as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from proxyfleet.simulators.windows.powershell import syntax as ast

# Tails kept, least recently found first out. A 2 KB reconciler script leaves ~25 (one per
# top-level statement); each holds its script's text (shared by the script's tails) and a tuple.
CAPACITY = 1024
# Tails looked for (and kept) per script: its first statements' only. A prologue of its own is a few
# statements; looking behind every statement of a long script would hash and keep quadratically.
FIRST_STATEMENTS = 32


@dataclass(frozen=True)
class _Tail:
    text: str  # the whole script the tail was parsed from
    statements: tuple[ast.Statement, ...]


class StatementTails:
    """Parsed top-level statements by (position, text length, the text from there on)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._tails: OrderedDict[tuple[int, int, int], _Tail] = OrderedDict()
        self.found = 0  # how many lookups a tail served

    def __len__(self) -> int:
        return len(self._tails)

    def key(self, start: int, length: int, tail: str) -> tuple[int, int, int]:
        """Where a tail begins, how long its script is, and a hash of the tail's text."""
        return start, length, hash(tail)

    def find(self, text: str, start: int) -> tuple[ast.Statement, ...] | None:
        """The statements from ``start`` to the end of ``text``, if a script that ends with the
        same characters from the same position was parsed before; else None."""
        ending = text[start:]
        key = self.key(start, len(text), ending)
        tail = self._tails.get(key)
        # Same length and same ending from ``start`` on: the same tail (a hash alone may collide).
        if tail is None or not tail.text.endswith(ending):
            return None
        self._tails.move_to_end(key)
        self.found += 1
        return tail.statements

    def remember(self, text: str, starts: Sequence[int], statements: Sequence[ast.Statement]) -> None:
        """Keep the tails of a script that parsed: ``statements[i:]`` begins at ``starts[i]``."""
        for index, start in enumerate(starts):
            key = self.key(start, len(text), text[start:])
            self._tails[key] = _Tail(text, tuple(statements[index:]))
            self._tails.move_to_end(key)
        while len(self._tails) > self.capacity:
            self._tails.popitem(last=False)
