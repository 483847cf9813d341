"""``--help`` with the options under headings, the way ``kubectl … --help`` and ``pytest --help``
print theirs: a command with many options (lab, reconciler, proxy, cluster, reports) reads like a
manual's page instead of one flat list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

Sections = Sequence[tuple[str, Sequence[str]]]


class SectionedCommand(click.Command):
    """A command whose options are listed under ``sections`` (heading, option names in order;
    ``help`` is the help option); an option in no section is listed under "Other options" (a test
    keeps that list empty)."""

    def __init__(self, *args: Any, sections: Sections = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections

    def unsectioned(self) -> list[str]:
        """The options no section lists (besides --help)."""
        named = {name for _, names in self.sections for name in names}
        return [p.name for p in self.params if isinstance(p, click.Option) and p.name not in named and p.name]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, tuple[str, str]] = {}
        help_option = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and param.name:
                # "help" in a section stands for the help option, whatever click names it
                rows["help" if param is help_option else param.name] = record
        shown: set[str] = set()
        for heading, names in self.sections:
            found = [rows[name] for name in names if name in rows]
            shown |= set(names)
            if found:
                with formatter.section(heading):
                    formatter.write_dl(found)
        rest = [record for name, record in rows.items() if name not in shown]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)
