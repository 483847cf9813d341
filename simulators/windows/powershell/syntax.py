"""The abstract syntax tree of the PowerShell subset.

Plain frozen dataclasses; every node carries its source extent so that error records can
point at the offending text the way Windows PowerShell does (``At line:1 char:5``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Extent:
    """A half-open character range ``[start, end)`` in the script text."""

    start: int
    end: int


# --- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    extent: Extent


@dataclass(frozen=True)
class StringConstant(Expr):
    value: str
    quote: str  # "bare", "single", "double"


@dataclass(frozen=True)
class ExpandableString(Expr):
    """A double-quoted string (or bareword) with ``$var``/``$(...)`` parts."""

    parts: tuple[str | Expr, ...]
    quote: str


@dataclass(frozen=True)
class NumberConstant(Expr):
    value: int | float


@dataclass(frozen=True)
class Variable(Expr):
    name: str
    scope: str = ""  # "env", "script", "global", "local" or ""


@dataclass(frozen=True)
class ArrayLiteral(Expr):
    """The comma operator: ``1, 2, 3``."""

    elements: tuple[Expr, ...]


@dataclass(frozen=True)
class ArrayExpression(Expr):
    """``@( statements )``."""

    body: StatementBlock


@dataclass(frozen=True)
class SubExpression(Expr):
    """``$( statements )``."""

    body: StatementBlock


@dataclass(frozen=True)
class ParenExpression(Expr):
    """``( pipeline )``."""

    pipeline: Statement


@dataclass(frozen=True)
class HashtableLiteral(Expr):
    pairs: tuple[tuple[Expr, Statement], ...]
    ordered: bool = False


@dataclass(frozen=True)
class ScriptBlockLiteral(Expr):
    body: StatementBlock
    text: str


@dataclass(frozen=True)
class TypeLiteral(Expr):
    """``[System.Environment]``."""

    type_name: str


@dataclass(frozen=True)
class Convert(Expr):
    """A cast: ``[string]$x``."""

    type_name: str
    operand: Expr


@dataclass(frozen=True)
class Member(Expr):
    """``$x.Name`` or ``[Type]::Name``."""

    target: Expr
    member: Expr
    static: bool


@dataclass(frozen=True)
class InvokeMember(Expr):
    """``$x.Method(args)`` or ``[Type]::Method(args)``."""

    target: Expr
    member: Expr
    arguments: tuple[Expr, ...]
    static: bool


@dataclass(frozen=True)
class Index(Expr):
    target: Expr
    index: Expr


@dataclass(frozen=True)
class Unary(Expr):
    operator: str  # "-not", "!", "-", "+", "-join", "-split"
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    operator: str  # lower-cased, e.g. "-eq", "+", "-and"
    left: Expr
    right: Expr


# --- statements ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    extent: Extent


@dataclass(frozen=True)
class StatementBlock:
    statements: tuple[Statement, ...]
    extent: Extent


@dataclass(frozen=True)
class Redirection:
    stream: str  # "1", "2", "*"
    target: Expr | None  # None means "&1" (merge into output)
    append: bool
    extent: Extent


@dataclass(frozen=True)
class CommandParameter:
    """``-Name`` or ``-Name:value``."""

    name: str
    argument: Expr | None
    extent: Extent
    text: str


@dataclass(frozen=True)
class Command(Statement):
    """A command invocation inside a pipeline."""

    name: Expr
    elements: tuple[CommandParameter | Expr, ...]
    invocation: str  # "", "&"
    redirections: tuple[Redirection, ...] = ()


@dataclass(frozen=True)
class CommandExpression(Statement):
    """An expression used as a pipeline element."""

    expression: Expr
    redirections: tuple[Redirection, ...] = ()


@dataclass(frozen=True)
class Pipeline(Statement):
    elements: tuple[Command | CommandExpression, ...]


@dataclass(frozen=True)
class Assignment(Statement):
    target: Expr
    operator: str  # "=", "+=", "-="
    value: Statement


@dataclass(frozen=True)
class IfStatement(Statement):
    clauses: tuple[tuple[Statement, StatementBlock], ...]
    else_block: StatementBlock | None


@dataclass(frozen=True)
class ForEachStatement(Statement):
    variable: str
    iterable: Statement
    body: StatementBlock


@dataclass(frozen=True)
class CatchClause:
    type_names: tuple[str, ...]
    body: StatementBlock


@dataclass(frozen=True)
class TryStatement(Statement):
    body: StatementBlock
    catches: tuple[CatchClause, ...]
    finally_block: StatementBlock | None


@dataclass(frozen=True)
class FlowStatement(Statement):
    """``throw``, ``exit`` or ``return`` with an optional pipeline."""

    keyword: str
    value: Statement | None = field(default=None)
