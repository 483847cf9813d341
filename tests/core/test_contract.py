"""The shared contract names: each defined once, and consistent with what OpenShift uses."""

from __future__ import annotations

from proxyfleet.core import contract


def test_the_proxy_object_is_config_openshift_io_v1_proxies_cluster() -> None:
    assert contract.PROXY == ("config.openshift.io", "v1", "proxies", "cluster")


def test_node_marks_live_under_the_project_prefix() -> None:
    for name in (contract.STATE_LABEL, contract.MESSAGE, contract.APPLIED):
        assert name.startswith(contract.ANNOTATION_PREFIX)
    assert len({contract.STATE_LABEL, contract.MESSAGE, contract.APPLIED}) == 3


def test_the_proxy_variables_and_services_have_no_duplicates() -> None:
    assert contract.PROXY_VARIABLES == ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
    assert len(set(contract.EGRESS_SERVICES)) == len(contract.EGRESS_SERVICES)
    assert {"containerd", "kubelet"} <= set(contract.EGRESS_SERVICES)
