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

MEASURED = "a 10-node run of every scenario, quiet 2-core machine, proxyfleet 0.1.0 at 8f1972e (2026-11-26)"

SECONDS: dict[str, float] = {
    "test_reconciler_and_control_plane_faults": 55.4,
    "test_proxy_url_and_noproxy_change_at_runtime": 48.9,
    "test_host_and_network_faults": 40.6,
    "test_proxy_ca_rotation_at_runtime": 36.0,
    "test_an_instance_added_after_a_change_gets_the_current_settings": 32.9,
    "test_proxy_shapes_are_carried_exactly": 32.0,
    "test_out_of_band_changes_are_repaired": 24.0,
    "test_proxy_then_trusted_ca_removed": 22.9,
    "test_an_instance_removed_from_windows_instances_is_cleaned": 16.0,
    "test_instances_join_a_cluster_installed_with_a_proxy": 13.7,
    "test_proxy_added_at_runtime": 13.7,
    "test_no_proxy_nothing_changes": 5.1,
    # only with Linux nodes (they are its CAPI machines): 19.6 s in a 5 + 5 run (2026-11-28), where
    # test_proxy_added_at_runtime took 15.4 s — scaled to this table by that ratio
    "test_capi_machines_boot_with_the_proxy_in_their_bootstrap_data": 17.5,
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
