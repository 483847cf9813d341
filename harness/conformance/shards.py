"""``proxyfleet conformance --shard K/N``: the K-th of N balanced parts of the selected scenarios,
so a CI system's own parallelism (a GitHub Actions matrix, GitLab's ``parallel:``) runs one run
on N machines, as Playwright's ``--shard`` does; ``proxyfleet report merge`` joins their reports.

The parts are balanced by each scenario's measured cost (``scenariocosts``: the seconds it took in
a 10-node run; an unmeasured one is priced from its declared reboot waves) — longest first onto
the lightest part, ties broken by name, so every machine computes the same parts from the
same selection and each scenario is in exactly one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class ShardError(ValueError):
    """A ``--shard`` value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``total`` parts."""

    index: int
    total: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if found is None:
            raise ShardError(f"{text!r}: expected K/N, e.g. 1/4 (the first of four parts)")
        index, total = int(found.group(1)), int(found.group(2))
        if total < 1 or not 1 <= index <= total:
            raise ShardError(f"{text!r}: K must be 1 to N, and N at least 1")
        return cls(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def partition(items: Sequence[T], total: int, cost: Callable[[T], float], name: Callable[[T], str]) -> list[list[T]]:
    """``items`` in ``total`` parts of nearly equal summed ``cost``: longest-processing-time first
    (each item, costliest first, onto the part with the least cost so far, the lowest-numbered on
    a tie), deterministic whatever order ``items`` came in. Each part keeps the items' given order."""
    parts: list[list[T]] = [[] for _ in range(total)]
    loads = [0.0] * total
    for item in sorted(items, key=lambda i: (-cost(i), name(i))):
        lightest = min(range(total), key=lambda p: (loads[p], p))
        parts[lightest].append(item)
        loads[lightest] += cost(item)
    order = {id(item): position for position, item in enumerate(items)}
    return [sorted(part, key=lambda i: order[id(i)]) for part in parts]


def select(items: Sequence[T], shard: Shard, cost: Callable[[T], float], name: Callable[[T], str]) -> list[T]:
    """The items of ``shard``, or a :class:`ShardError` if it would have none (more parts than
    scenarios: a CI matrix larger than the run)."""
    chosen = partition(items, shard.total, cost, name)[shard.index - 1]
    if not chosen:
        raise ShardError(f"--shard {shard}: {shard.total} parts of {len(items)} selected scenario(s) leave this "
                         "one empty; use at most as many parts as scenarios")
    return chosen
