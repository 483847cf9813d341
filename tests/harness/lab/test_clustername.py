"""The name a cluster run must be given: the Infrastructure's infrastructureName, or the API
server URL where the cluster serves none; a run without it, or with another, says which cluster
the kubeconfig reaches."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes import client

from proxyfleet.harness.lab.clustername import ClusterName, ClusterNameError, read_cluster_name
from proxyfleet.simulators.controlplane.cluster import ControlPlane

INFRASTRUCTURE = ("config.openshift.io", "v1", "infrastructures", "cluster")


async def test_an_openshift_cluster_is_named_by_its_infrastructure(plane: ControlPlane,
                                                                   api: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(api)
    wanted = (await asyncio.to_thread(objects.get_cluster_custom_object, *INFRASTRUCTURE))["status"]["infrastructureName"]
    name = await read_cluster_name(api)
    assert wanted and name.name == wanted
    assert "infrastructureName" in name.source
    await asyncio.to_thread(objects.delete_cluster_custom_object, *INFRASTRUCTURE)
    unnamed = await read_cluster_name(api)  # not OpenShift: the API server as the kubeconfig gives it
    assert unnamed.name == api.configuration.host and "serves no Infrastructure" in unnamed.source


def test_a_run_goes_ahead_only_on_the_cluster_it_was_given() -> None:
    name = ClusterName("ci-ln-7x2kq-72292", "Infrastructure/cluster status.infrastructureName")
    name.require("ci-ln-7x2kq-72292")
    with pytest.raises(ClusterNameError, match=r"reaches the cluster ci-ln-7x2kq-72292 .*--target-cluster "
                                               r"ci-ln-7x2kq-72292 \(nothing was touched\)"):
        name.require(None)
    with pytest.raises(ClusterNameError, match=r"--target-cluster prod-eu-1: this kubeconfig reaches the cluster "
                                               r"ci-ln-7x2kq-72292 .*not prod-eu-1"):
        name.require("prod-eu-1")
