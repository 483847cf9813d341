"""Parsed tails: a script behind a prologue of its own is parsed once, exactly as it parses alone."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxyfleet.core.nodessh import data_prologue
from proxyfleet.harness.reconciler.scripts import apply_script
from proxyfleet.simulators.windows.powershell import syntax as ast
from proxyfleet.simulators.windows.powershell.errors import ParseError
from proxyfleet.simulators.windows.powershell.parsing import Parser, parse
from proxyfleet.simulators.windows.powershell.tailcache import FIRST_STATEMENTS, StatementTails


def fresh(text: str) -> ast.StatementBlock:
    """The tree without any cache."""
    return Parser(text).parse_script()


def test_a_body_behind_a_new_prologue_is_found_and_parses_as_it_would_alone() -> None:
    tails = StatementTails()
    first = data_prologue("0123456789abcdef.json") + apply_script()
    second = data_prologue("fedcba9876543210.json") + apply_script()
    assert Parser(first, tails).parse_script() == fresh(first)
    assert tails.found == 0
    block = Parser(second, tails).parse_script()
    assert tails.found == 1
    assert block == fresh(second)
    # The prologue was parsed afresh: its own name, not the first script's.
    assert "fedcba9876543210.json" in repr(block.statements[:4])
    assert "0123456789abcdef.json" not in repr(block)


def test_the_module_parse_serves_the_reconcilers_apply_from_its_tail() -> None:
    from proxyfleet.simulators.windows.powershell.parsing import TAILS

    parse(data_prologue("a" * 16 + ".json") + apply_script())
    before = TAILS.found
    text = data_prologue("b" * 16 + ".json") + apply_script()
    assert parse(text) == fresh(text)
    assert TAILS.found == before + 1


def test_a_tail_at_another_position_is_not_taken() -> None:
    # The same body behind a longer prologue: its extents differ, so it is parsed again.
    tails = StatementTails()
    Parser("$a = 1\nGet-Item -Path C:\\k\n", tails).parse_script()
    text = "$abc = 1\nGet-Item -Path C:\\k\n"
    assert Parser(text, tails).parse_script() == fresh(text)
    assert tails.found == 0


def test_a_colliding_key_is_told_apart_by_the_text() -> None:
    class Colliding(StatementTails):
        def key(self, start: int, length: int, tail: str) -> tuple[int, int, int]:
            return 0, 0, 0  # every tail under one key

    tails = Colliding()
    Parser("'one'\n'two'\n", tails).parse_script()
    text = "'one'\n'six'\n"
    assert Parser(text, tails).parse_script() == fresh(text)
    assert tails.found == 0


def test_an_error_in_a_new_prologue_is_still_raised_where_it_is() -> None:
    tails = StatementTails()
    body = "$x = 1\n'done'\n"
    Parser("$a = 2\n" + body, tails).parse_script()
    with pytest.raises(ParseError) as raised:
        Parser("$a =(\n" + body, tails).parse_script()
    assert raised.value.problems[0].extent.start < 7


def test_a_script_that_fails_leaves_no_tail() -> None:
    tails = StatementTails()
    with pytest.raises(ParseError):
        Parser("'fine'\n'also fine'\n)", tails).parse_script()
    assert len(tails) == 0


def test_only_the_first_statements_of_a_long_script_leave_tails() -> None:
    tails = StatementTails()
    text = "".join(f"$v{i} = {i}\n" for i in range(FIRST_STATEMENTS * 3))
    assert Parser(text, tails).parse_script() == fresh(text)
    assert len(tails) == FIRST_STATEMENTS
    # Behind a new first statement of the same length, the rest is found again.
    again = "$w0 = 0\n" + text[len("$v0 = 0\n"):]
    assert Parser(again, tails).parse_script() == fresh(again)
    assert tails.found == 1


def test_least_recently_found_tails_go_first() -> None:
    tails = StatementTails(capacity=2)
    Parser("'a'\n'b'\n", tails).parse_script()  # two tails
    Parser("'c'\n", tails).parse_script()  # a third pushes out the oldest ('a' 'b')
    assert len(tails) == 2
    assert tails.find("'a'\n'b'\n", 0) is None
    assert tails.find("'x'\n'b'\n", 4) is not None


STATEMENTS = st.sampled_from([
    "$x = 1", "$y = 'a;b'", "Get-Item -Path C:\\k", "if ($x) { 'yes' } else { 'no' }",
    "foreach ($i in 1..3) { $i }", "try { 1 } finally { 2 }", "$h = @{ a = 1; b = 'two' }",
    "# a comment", "'x' | Out-Null", "[Environment]::GetEnvironmentVariable('A', 'Machine')",
    "$s = \"in $($x) too\"", "", ";",
])


NAMES = st.text(alphabet="abcdef0123456789", min_size=8, max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(NAMES, min_size=2, max_size=4), st.lists(STATEMENTS, max_size=3), st.lists(STATEMENTS, max_size=6),
       st.sampled_from(["\n", "\r\n", "; "]))
def test_any_scripts_sharing_tails_parse_as_they_do_alone(names: list[str], before: list[str], body: list[str],
                                                         separator: str) -> None:
    # Prologues of one length (a random name each, as the data file's), other statements around.
    tails = StatementTails()
    for name in names:
        text = separator.join([*before, f"$dataPath = '{name}'", *body])
        block = Parser(text, tails).parse_script()
        assert block == fresh(text)
    named_at = text.index("$dataPath")
    if any(s.extent.start > named_at for s in block.statements):
        assert tails.found >= len(names) - 1  # the statements after the name: found behind every new one
