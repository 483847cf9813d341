"""The lab as one object: its parts exist once it has started, and using one earlier says so."""

from __future__ import annotations

import pytest

from proxyfleet.harness.lab import Lab, LabNotStarted, LabSettings


@pytest.mark.parametrize("part", ["control_plane", "origins", "fleet"])
def test_a_part_used_before_start_is_a_clear_error(part: str) -> None:
    lab = Lab(LabSettings(nodes=1))
    with pytest.raises(LabNotStarted, match="start the lab first"):
        getattr(lab, part)


def test_the_egress_firewall_is_on_unless_the_lab_is_made_open() -> None:
    assert LabSettings().egress_firewall is True
    assert LabSettings(egress_firewall=False).egress_firewall is False


async def test_a_started_lab_has_every_part_and_its_network_state() -> None:
    async with Lab(LabSettings(nodes=1, proxy=False)) as lab:
        assert lab.fleet.nodes and lab.control_plane.kubeconfig_path.exists()
        assert lab.egress_firewall and lab.proxy is None
        lab.set_egress_firewall(False)
        assert not lab.egress_firewall and lab.origins.internet_open
        assert lab.violations_path.exists()
