"""The lab as one object: its parts exist once it has started, and using one earlier says so."""

from __future__ import annotations

import asyncio
import gc
import stat
import weakref
from pathlib import Path

import aiohttp
import pytest
from kubernetes import client

from proxyfleet.core.process_limits import YOUNG_GENERATION
from proxyfleet.harness.lab import Lab, LabError, LabNotStarted, LabSettings
from proxyfleet.harness.lab.vendor import VendorProxy, VendorProxySpec


@pytest.mark.parametrize("part", ["control_plane", "origins", "fleet"])
def test_a_part_used_before_start_is_a_clear_error(part: str) -> None:
    lab = Lab(LabSettings(nodes=1))
    with pytest.raises(LabNotStarted, match="start the lab first"):
        getattr(lab, part)


def test_the_egress_firewall_is_on_unless_the_lab_is_made_open() -> None:
    assert LabSettings().egress_firewall is True
    assert LabSettings(egress_firewall=False).egress_firewall is False


def test_heartbeats_and_grace_grow_together_once_the_fleet_would_renew_over_a_hundred_leases_a_second() -> None:
    assert LabSettings(nodes=10).heartbeat_and_grace() == (1.0, 4.0)  # as set
    assert LabSettings(nodes=100).heartbeat_and_grace() == (1.0, 4.0)
    assert LabSettings(nodes=150, linux_nodes=150).heartbeat_and_grace() == pytest.approx((3.0, 12.0))
    assert LabSettings(nodes=1000).heartbeat_and_grace() == pytest.approx((10.0, 40.0))  # a real cluster's
    assert LabSettings(nodes=200, heartbeat=2.0, node_grace=40.0).heartbeat_and_grace() == (2.0, 40.0)


def test_the_reconcilers_resync_stretches_once_the_fleet_would_be_looked_at_over_ten_times_a_second() -> None:
    assert LabSettings(nodes=10).resync() == 10.0
    assert LabSettings(nodes=100).resync() == 10.0  # every lab of up to 100 nodes as before
    assert LabSettings(nodes=150, linux_nodes=150).resync() == pytest.approx(30.0)
    assert LabSettings(nodes=1000).resync() == pytest.approx(100.0)
    # a scenario's own period (drift), within the same cap: 333 looks a second at 1,000 nodes was not
    assert LabSettings(nodes=10, resync_period=3.0).resync() == 3.0
    assert LabSettings(nodes=1000, resync_period=3.0).resync() == pytest.approx(100.0)
    assert LabSettings(nodes=10, resync_period=30.0).resync() == 30.0


def test_the_judge_learns_the_resync_period_of_the_reconciler_under_test() -> None:
    """The lab's own reconciler's period, or what an external one declares ({resync_period})."""
    own = Lab(LabSettings(nodes=1000, resync_period=3.0, reconciler="correct"))
    assert own.reconciler_resync_period == pytest.approx(100.0)
    external = Lab(LabSettings(nodes=10, reconciler_command="op --resync {resync_period}", reconciler_resync_period=90.0))
    assert external.reconciler_resync_period == 90.0  # its command's {resync_period}: test_conformance


async def test_a_started_lab_has_every_part_and_its_network_state() -> None:
    async with Lab(LabSettings(nodes=1, proxy=False)) as lab:
        assert lab.fleet.nodes and lab.control_plane.kubeconfig_path.exists()
        assert lab.egress_firewall and lab.proxy is None
        lab.set_egress_firewall(False)
        assert not lab.egress_firewall and lab.origins.internet_open
        assert lab.violations_path.exists()
        assert gc.get_threshold()[0] >= YOUNG_GENERATION  # the lab's process collects less often


async def test_a_lab_that_has_ended_leaves_nothing_alive() -> None:
    # A worker runs lab after lab: anything that keeps an ended lab reachable (a library's module-wide
    # cache, a registry of callbacks) keeps its whole fleet, and eight 1,000-node labs grew a worker to
    # 3.5 GB. Served traffic included: aiohttp caches each route's middleware chain process-wide.
    async with Lab(LabSettings(nodes=1, workloads=False)) as lab:  # with its proxy
        lab.set_egress_firewall(False)
        registry = lab.origins.server("quay.io")
        async with aiohttp.ClientSession() as session, session.get(
                f"https://{registry.address}:{registry.port}/v2/", ssl=False, server_hostname="quay.io") as answer:
            assert answer.status == 200
        assert [record.path for record in registry.access_log] == ["/v2/"]
    ended = weakref.ref(lab)
    del lab, registry
    gc.collect()
    assert ended() is None, [type(r).__qualname__ for r in gc.get_referrers(ended())]


async def test_a_state_directory_others_can_write_is_refused_before_anything_starts(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    lab = Lab(LabSettings(nodes=1, proxy=False, state_dir=shared))
    with pytest.raises(LabError, match=rf"state directory {shared} is owned by .*, mode 0777: others can write it"):
        async with lab:
            pass
    assert list(shared.iterdir()) == []  # nothing was written there
    assert lab._control_plane is None


async def test_a_missing_state_directory_is_made_private(tmp_path: Path) -> None:
    state = tmp_path / "labs" / "one"
    async with Lab(LabSettings(nodes=1, proxy=False, workloads=False, state_dir=state)) as lab:
        assert lab.state_dir == state and stat.S_IMODE(state.stat().st_mode) == 0o700


async def test_a_vendor_proxy_is_read_in_the_log_format_asked_for(tmp_path: Path) -> None:
    def hang_up(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    running = await asyncio.start_server(hang_up, "127.0.0.1", 0)  # a "running proxy" that answers
    port = running.sockets[0].getsockname()[1]
    lab = Lab(LabSettings(nodes=1))
    lab.state_dir = tmp_path
    try:
        await lab._start_vendor_proxy(VendorProxySpec(url=f"http://127.0.0.1:{port}", log_format="combined"),
                                      "127.0.0.1", "127.0.0.1")
        assert isinstance(lab.proxy, VendorProxy) and lab.proxy.settings.log_format == "combined"
    finally:
        await lab.stop()
        running.close()


async def test_a_lab_installed_with_a_proxy_carries_the_noproxy_it_was_installed_with() -> None:
    """``install_no_proxy``: the install-config's noProxy (a scenario that starts with a
    destination outside NO_PROXY, to move it in)."""
    async with Lab(LabSettings(nodes=1, install_proxy=True, install_no_proxy="intranet.corp.internal",
                               workloads=False)) as lab:
        objects = client.CustomObjectsApi(lab.api())
        proxy = await asyncio.to_thread(objects.get_cluster_custom_object, "config.openshift.io", "v1", "proxies",
                                        "cluster")
        assert proxy["spec"]["noProxy"] == "intranet.corp.internal"
        assert "intranet.corp.internal" in proxy["status"]["noProxy"]
        assert "registry.corp.internal" not in proxy["status"]["noProxy"]
