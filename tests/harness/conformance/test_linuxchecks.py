"""The Linux meanings of the checks, as pure functions of one look at a node: both spellings in
every service, units loaded as their files are, the extracted bundle exactly the node's own CAs
plus the cluster's."""

from __future__ import annotations

import datetime as dt

from proxyfleet.harness.conformance import linuxchecks
from proxyfleet.harness.conformance.linuxprobe import RHCOS, LinuxNodeState, ServiceState

PROXY = "http://proxy.corp:3128"
WANTED = {"HTTP_PROXY": PROXY, "HTTPS_PROXY": PROXY, "NO_PROXY": ".corp"}
BOTH = {"HTTP_PROXY": PROXY, "http_proxy": PROXY, "HTTPS_PROXY": PROXY, "https_proxy": PROXY,
        "NO_PROXY": ".corp", "no_proxy": ".corp"}
STARTED = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def state(crio: dict[str, str], kubelet: dict[str, str] | None = None, reload: bool = False,
          trusted: frozenset[str] = frozenset({"A", "B"})) -> LinuxNodeState:
    services = {"crio.service": ServiceState(True, 1001, STARTED, False, crio),
                "kubelet.service": (ServiceState(True, 1002, STARTED, reload, kubelet) if kubelet is not None
                                    else ServiceState(False, 0, STARTED, reload, {}))}
    return LinuxNodeState("rhcos", RHCOS, "b" * 32, services, "d" * 64, trusted, frozenset())


def test_both_spellings_of_what_is_set_and_nothing_of_what_is_not() -> None:
    assert linuxchecks.both_spellings(WANTED) == BOTH
    assert linuxchecks.both_spellings({"HTTPS_PROXY": PROXY, "HTTP_PROXY": None}) == \
        {"HTTPS_PROXY": PROXY, "https_proxy": PROXY}


def test_service_environment_names_what_each_service_lacks_holds_differently_or_should_not_hold() -> None:
    assert linuxchecks.service_environment(state(BOTH, BOTH), WANTED).ok
    upper = {k: v for k, v in BOTH.items() if k.isupper()}
    verdict = linuxchecks.service_environment(state(upper, BOTH), WANTED)
    assert not verdict.ok and verdict.observed == "crio.service: missing http_proxy, https_proxy, no_proxy"
    mangled = {**BOTH, "HTTP_PROXY": "http://build:s3cr"}
    assert "differs HTTP_PROXY" in linuxchecks.service_environment(state(BOTH, mangled), WANTED).observed
    left = linuxchecks.service_environment(state(BOTH, BOTH), {})
    assert not left.ok and left.observed.startswith("crio.service: unexpected HTTPS_PROXY=")
    assert left.expected == "no proxy variable in any egress service"
    stopped = linuxchecks.service_environment(state(BOTH, None), WANTED)
    assert not stopped.ok and "kubelet.service not running" in stopped.observed


def test_a_unit_changed_on_disk_and_not_reloaded_is_named() -> None:
    assert linuxchecks.units_loaded(state(BOTH, BOTH)).ok
    verdict = linuxchecks.units_loaded(state(BOTH, BOTH, reload=True))
    assert not verdict.ok and verdict.observed.endswith("(systemctl daemon-reload): kubelet.service")


def test_the_extracted_bundle_holds_exactly_the_nodes_own_and_the_clusters() -> None:
    assert linuxchecks.certificates(state(BOTH, BOTH), frozenset({"A", "B"}), 1).ok
    missing = linuxchecks.certificates(state(BOTH, BOTH), frozenset({"A", "B", "C"}), 1)
    assert not missing.ok and missing.observed == "missing 1: C…"
    extra = linuxchecks.certificates(state(BOTH, BOTH), frozenset({"A"}), 0)
    assert not extra.ok and extra.observed == "unexpected 1: B…"
    assert "tls-ca-bundle.pem" in extra.expected


def test_unit_environment_is_what_the_units_files_give_at_the_next_boot() -> None:
    assert linuxchecks.unit_environment({"crio.service": BOTH, "kubelet.service": BOTH}, WANTED).ok
    assert linuxchecks.unit_environment({"crio.service": {}, "kubelet.service": {}}, {}).ok
    lost = linuxchecks.unit_environment({"crio.service": {}, "kubelet.service": BOTH}, WANTED)
    assert not lost.ok and lost.observed.startswith("crio.service: missing HTTPS_PROXY")
    assert lost.observed.endswith("(at the next boot)")
    stale = linuxchecks.unit_environment({"crio.service": {**BOTH, "no_proxy": ".old"}, "kubelet.service": None},
                                         WANTED)
    assert not stale.ok and "crio.service: holds no_proxy='.old'" in stale.observed
    assert "kubelet.service would not start" in stale.observed
