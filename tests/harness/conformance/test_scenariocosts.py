"""Every scenario has a measured cost, and the costs balance the shards."""

from __future__ import annotations

import pytest

from proxyfleet.harness.cli.conformance import planned_scenarios
from proxyfleet.harness.conformance import scenariocosts, shards


@pytest.fixture(scope="module")
def scenarios() -> list[str]:
    return planned_scenarios(())


def test_every_lab_scenario_is_measured() -> None:
    """A new scenario gets a measured cost (``bench/scenario_costs.py``) rather than an estimate;
    a scenario renamed or removed leaves no stale entry. (With Linux nodes: those about them too.)"""
    every = planned_scenarios((), linux_nodes=1)
    assert sorted(every) == sorted(scenariocosts.SECONDS) == sorted(scenariocosts.SECONDS_AT_300)


def test_a_scenario_about_linux_nodes_is_left_out_of_a_run_without_them(scenarios: list[str]) -> None:
    capi = "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data"
    assert capi not in scenarios and capi in planned_scenarios((), linux_nodes=1)


@pytest.mark.parametrize("nodes", [10, 300])
@pytest.mark.parametrize("parts", [2, 3, 4])
def test_measured_costs_balance_the_parts(scenarios: list[str], parts: int, nodes: int) -> None:
    def priced(name: str) -> float:
        return scenariocosts.cost(name, 0, nodes)

    loads = [sum(priced(name) for name in part) for part in shards.partition(scenarios, parts, priced, lambda n: n)]
    assert max(loads) / min(loads) < 1.15


def test_a_scenario_is_priced_at_the_runs_fleet_size() -> None:
    """On the line through its two measurements: exact at 10 and 300 nodes, between them in
    between, its extension past them; under 10 nodes, the 10-node figure."""
    name = "test_a_destination_leaves_noproxy"
    small, large = scenariocosts.SECONDS[name], scenariocosts.SECONDS_AT_300[name]
    assert scenariocosts.cost(name, 0, 10) == small and scenariocosts.cost(name, 0, 3) == small
    assert scenariocosts.cost(name, 0, 300) == pytest.approx(large)
    assert scenariocosts.cost(name, 0, 155) == pytest.approx((small + large) / 2)
    assert scenariocosts.cost(name, 0, 1000) == pytest.approx(large + (large - small) / 290 * 700)


def test_the_order_of_the_costliest_changes_with_the_fleet(scenarios: list[str]) -> None:
    """Why a run is priced at its own size: the costliest scenario at 10 nodes (the stuck node's
    fixed report wait) is not the costliest at 1,000, where rollouts weigh most."""
    def costliest(nodes: int) -> str:
        return max(scenarios, key=lambda n: scenariocosts.cost(n, 0, nodes))

    assert costliest(10) == "test_an_instance_that_never_comes_back_keeps_its_slot"
    assert costliest(1000) != costliest(10)


def test_the_cli_plans_shards_at_the_runs_fleet_size(scenarios: list[str]) -> None:
    """The parts the CLI prints before the labs start are those the plugin runs: both priced at
    the run's nodes (a part priced at 10 nodes would be another part at 1,000)."""
    for nodes in (10, 1000):
        parts = shards.partition(scenarios, 4, lambda n, at=nodes: scenariocosts.cost(n, 0, at), lambda n: n)
        for index in (1, 4):
            planned = planned_scenarios((), shard=shards.Shard(index, 4), nodes=nodes)
            assert sorted(planned) == sorted(parts[index - 1])


def test_an_unmeasured_scenario_is_priced_from_its_waves() -> None:
    assert scenariocosts.cost("test_not_measured_yet", 0) == scenariocosts.SETUP_SECONDS
    assert scenariocosts.cost("test_not_measured_yet", 3) == pytest.approx(
        scenariocosts.SETUP_SECONDS + 3 * scenariocosts.WAVE_SECONDS)
    # at 300 nodes: scaled as the plain runtime-add scenario's cost scales
    reference = scenariocosts.SECONDS_AT_300["test_proxy_added_at_runtime"] / \
        scenariocosts.SECONDS["test_proxy_added_at_runtime"]
    assert scenariocosts.cost("test_not_measured_yet", 3, 300) == pytest.approx(
        (scenariocosts.SETUP_SECONDS + 3 * scenariocosts.WAVE_SECONDS) * reference)
    assert scenariocosts.cost("test_proxy_added_at_runtime", 9) == scenariocosts.SECONDS["test_proxy_added_at_runtime"]
