"""When the cluster's proxy settings became visible on a watch, against the embedded control plane
through the official client: a published Proxy status and a changed trusted CA bundle are
sightings, a label is not; a write is seen no earlier than it returned, and a sighting is not
lent to another write."""

from __future__ import annotations

import asyncio
import datetime as dt

from kubernetes import client

from proxyfleet.core.contract import INJECT_LABEL, OPERATOR_NAMESPACE, TRUSTED_CA
from proxyfleet.harness.conformance.sightings import ChangeSightings, first_seen
from proxyfleet.harness.lab import admin
from tests.support import wait_until

T0 = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


async def test_a_published_status_and_a_new_bundle_are_sightings_a_label_is_not(api: client.ApiClient) -> None:
    sightings = ChangeSightings(api)
    sightings.start()
    try:
        await wait_until(lambda: sightings.synced, what="both watches listed")
        assert sightings.times == []  # the listing is the baseline, not a change
        await admin.set_proxy(api, http_proxy="http://proxy.corp.internal:3128",
                              https_proxy="http://proxy.corp.internal:3128", no_proxy=".corp.internal")
        await wait_until(lambda: len(sightings.times) == 1, what="the published status")
        core = client.CoreV1Api(api)
        body = {"metadata": {"name": TRUSTED_CA, "namespace": OPERATOR_NAMESPACE, "labels": {"team": "a"}}}
        await asyncio.to_thread(core.create_namespaced_config_map, OPERATOR_NAMESPACE, body)
        await wait_until(lambda: len(sightings.times) == 2, what="a bundle ConfigMap where there was none")
        await asyncio.to_thread(core.patch_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE,
                                {"metadata": {"labels": {"team": "b"}}})
        await wait_until(lambda: sightings.bundle_labels().get("team") == "b", what="the label on the watch")
        assert len(sightings.times) == 2  # labels are not the bundle
        await asyncio.to_thread(core.patch_namespaced_config_map, TRUSTED_CA, OPERATOR_NAMESPACE,
                                {"metadata": {"labels": {INJECT_LABEL: "true"}}})
        await wait_until(lambda: len(sightings.times) == 3, what="the injected bundle")
    finally:
        sightings.stop()


def test_a_write_is_seen_at_its_first_sighting_and_never_before_it_returned() -> None:
    times = [at(1.5), at(6), at(9)]
    assert first_seen(times, at(1), at(1.2), at(5)) == at(1.5)
    assert first_seen(times, at(1), at(2), at(5)) == at(2)  # the watch was quicker than the reply
    # nothing a reconciler acts on changed: the next write's sighting is not this one's
    assert first_seen(times, at(3), at(3.1), at(5)) == at(3.1)
    assert first_seen(times, at(5), at(5.1), None) == at(6)
