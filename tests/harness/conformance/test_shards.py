"""--shard K/N: the selected scenarios in N parts balanced by cost, the same parts whatever order
they were collected in, each scenario in exactly one; a bad K/N or an empty part is one error."""

from __future__ import annotations

import random

import pytest

from proxyfleet.harness.conformance.shards import Shard, ShardError, partition, select

# twelve scenarios with their reboot waves, as the suites declare them (@pytest.mark.rollouts)
SCENARIOS = {"install": 2, "add": 3, "rotate": 4, "change": 3, "remove": 2, "baseline": 0, "join": 3,
             "deconfigure": 3, "drift": 2, "shapes": 3, "faults-a": 4, "faults-b": 5}


def _cost(name: str) -> float:
    return SCENARIOS[name] + 1


@pytest.mark.parametrize("total", [1, 2, 3, 4, 5, 12])
def test_every_scenario_is_in_exactly_one_part_and_the_parts_are_balanced(total: int) -> None:
    parts = partition(list(SCENARIOS), total, _cost, str)
    assert sorted(name for part in parts for name in part) == sorted(SCENARIOS)
    loads = [sum(_cost(name) for name in part) for part in parts]
    assert max(loads) - min(loads) <= max(_cost(name) for name in SCENARIOS)  # LPT's bound


def test_every_machine_computes_the_same_parts_whatever_the_collection_order() -> None:
    names = list(SCENARIOS)
    expected = [sorted(part) for part in partition(names, 4, _cost, str)]
    for seed in range(5):
        random.Random(seed).shuffle(names)
        assert [sorted(part) for part in partition(names, 4, _cost, str)] == expected


def test_a_part_keeps_the_collection_order() -> None:
    names = list(SCENARIOS)
    for part in partition(names, 3, _cost, str):
        assert part == [name for name in names if name in part]


@pytest.mark.parametrize(("text", "said"), [("1/0", "K must be 1 to N"), ("5/4", "K must be 1 to N"),
                                            ("0/4", "K must be 1 to N"), ("1-4", "expected K/N"), ("", "expected K/N")])
def test_a_bad_shard_is_one_error(text: str, said: str) -> None:
    with pytest.raises(ShardError, match=said):
        Shard.parse(text)


def test_a_part_left_empty_is_an_error_not_a_pass() -> None:
    assert select(["a", "b"], Shard(2, 2), lambda _: 1.0, str) == ["b"]
    with pytest.raises(ShardError, match="leave this one empty"):
        select(["a", "b"], Shard(3, 3), lambda _: 1.0, str)
    assert str(Shard.parse(" 2 / 3 ")) == "2/3"
