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
    assert sorted(every) == sorted(scenariocosts.SECONDS)


def test_a_scenario_about_linux_nodes_is_left_out_of_a_run_without_them(scenarios: list[str]) -> None:
    capi = "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data"
    assert capi not in scenarios and capi in planned_scenarios((), linux_nodes=1)


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_measured_costs_balance_the_parts(scenarios: list[str], parts: int) -> None:
    loads = [sum(scenariocosts.cost(name, 0) for name in part)
             for part in shards.partition(scenarios, parts, lambda n: scenariocosts.cost(n, 0), lambda n: n)]
    assert max(loads) / min(loads) < 1.15


def test_an_unmeasured_scenario_is_priced_from_its_waves() -> None:
    assert scenariocosts.cost("test_not_measured_yet", 0) == scenariocosts.SETUP_SECONDS
    assert scenariocosts.cost("test_not_measured_yet", 3) == pytest.approx(
        scenariocosts.SETUP_SECONDS + 3 * scenariocosts.WAVE_SECONDS)
    assert scenariocosts.cost("test_proxy_added_at_runtime", 9) == scenariocosts.SECONDS["test_proxy_added_at_runtime"]
