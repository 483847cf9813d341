"""What each conformance scenario costs, measured: the seconds its lab took in a 10-node run of
every scenario on a quiet 2-core machine (``python bench/scenario_costs.py REPORT.json`` prints
this table again from any ``--json`` report).

Shards (``--shard K/N``) and the order scenarios start in are balanced by these figures: the
declared reboot waves (``@pytest.mark.rollouts``) left a 2.2-fold spread between four parts, because a
wave costs a scenario with faults or many checks far more than a plain one. The ratios hold at
other fleet sizes: every scenario's fleet work grows with its nodes, and the fault scenarios'
fixed budget of 2 makes their waves grow with the nodes too. A scenario missing here (a new one
before the table is measured again) is priced from its declared waves (``estimate``).
"""

from __future__ import annotations

MEASURED = "a 10-node run of every scenario, quiet 2-core machine, proxyfleet 0.1.0 (2026-11-28, one fault each)"

SECONDS: dict[str, float] = {
    "test_an_instance_that_never_comes_back_keeps_its_slot": 42.4,
    "test_a_destination_leaves_noproxy_and_comes_back": 27.9,
    "test_an_instance_added_after_a_change_gets_the_current_settings": 26.2,
    "test_proxy_then_trusted_ca_removed": 23.7,
    "test_out_of_band_changes_are_repaired": 23.6,
    "test_proxy_url_changed_at_runtime": 22.3,
    "test_a_change_while_the_proxy_is_down_lands_and_pulls_recover": 19.9,
    "test_a_second_change_while_the_first_rolls_out_lands": 19.3,
    "test_different_http_and_https_proxies_are_carried_exactly": 18.5,
    "test_the_api_server_restarted_mid_rollout_with_its_history_compacted": 17.2,
    "test_an_instance_whose_host_key_changed_is_refused": 16.4,
    "test_noproxy_star_sends_everything_direct": 16.0,
    "test_proxy_ca_renewed_under_the_same_subject": 15.0,
    "test_proxy_ca_rotated_to_a_new_ca": 14.6,
    "test_an_instance_off_the_network_converges_once_back": 14.6,
    "test_proxy_added_at_runtime": 11.2,
    "test_an_https_proxy_alone_and_an_untidy_noproxy_are_carried_exactly": 11.2,
    "test_an_instance_removed_from_windows_instances_is_cleaned": 10.8,
    "test_the_reconciler_killed_mid_rollout_reboots_no_node_twice": 9.6,
    "test_instances_join_a_cluster_installed_with_a_proxy": 8.0,
    "test_no_proxy_nothing_changes": 3.2,
    # only with Linux nodes (they are its CAPI machines): 19.6 s in a 5 + 5 run (2026-11-28), where
    # test_proxy_added_at_runtime took 15.4 s — scaled to this table by that ratio
    "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data": 14.3,
}

# For a scenario not measured yet: its set-up and one plain rollout (what test_proxy_added_at_runtime
# costs, one wave) and that again per further declared wave.
SETUP_SECONDS = 5.0
WAVE_SECONDS = 8.7


def estimate(rollouts: int) -> float:
    """The cost of an unmeasured scenario that declares ``rollouts`` reboot waves."""
    return SETUP_SECONDS + WAVE_SECONDS * rollouts


def cost(name: str, rollouts: int) -> float:
    """Seconds the scenario ``name`` takes (measured), or its estimate from ``rollouts``."""
    return SECONDS.get(name, estimate(rollouts))
