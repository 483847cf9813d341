"""The name a cluster run must be given before it touches a cluster (``--target-cluster``).

A cluster run changes the cluster's Proxy and reboots every Windows node: pointed at the wrong
kubeconfig context it is an outage. Like ``terraform apply`` naming its workspace, the user names
the cluster they mean, and the run goes ahead only if the kubeconfig reaches that one.

The name is OpenShift's own: ``Infrastructure/cluster`` ``status.infrastructureName`` (the
installer's infra ID, e.g. ``ci-ln-7x2kq-72292``, also in the install's ``metadata.json`` as
``infraID``, so a CI job knows it without asking the cluster). A cluster that serves no
Infrastructure (not OpenShift) is named by its API server URL as the kubeconfig gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.harness.lab.snapshot import call


class ClusterNameError(RuntimeError):
    """The cluster's name cannot be read, or is not the one the run was given."""


@dataclass(frozen=True)
class ClusterName:
    """A cluster's name and where it was read (shown beside it, so a user knows what to compare)."""

    name: str
    source: str

    def describe(self) -> str:
        return f"{self.name} ({self.source})"

    def require(self, given: str | None) -> None:
        """Go ahead only if ``given`` names this cluster; otherwise say which cluster this is."""
        if given is None:
            raise ClusterNameError(
                f"this kubeconfig reaches the cluster {self.describe()}; a run changes its Proxy and reboots every "
                f"Windows node, so name it to go ahead: --target-cluster {self.name} (nothing was touched)")
        if given != self.name:
            raise ClusterNameError(
                f"--target-cluster {given}: this kubeconfig reaches the cluster {self.describe()}, not {given} "
                "(check the kubeconfig's current context; nothing was touched)")


async def read_cluster_name(api: client.ApiClient) -> ClusterName:
    """The cluster's name: its Infrastructure's ``status.infrastructureName``, or the API server URL
    where the cluster serves no Infrastructure (404). Any other refusal is an error: a run that may
    not read the name may not change the cluster either."""
    try:
        infrastructure = await call(client.CustomObjectsApi(api).get_cluster_custom_object, "config.openshift.io",
                                    "v1", "infrastructures", "cluster")
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterNameError(f"cannot reach the cluster's API server {api.configuration.host}: "
                               f"{type(exc).__name__}") from None
    except ApiException as exc:
        if exc.status != 404:
            raise ClusterNameError(f"cannot read Infrastructure/cluster, which names the cluster ({exc.status} "
                                   f"{exc.reason})") from None
        return ClusterName(str(api.configuration.host), "its API server: it serves no Infrastructure")
    name = str(((infrastructure or {}).get("status") or {}).get("infrastructureName") or "")
    if name:
        return ClusterName(name, "Infrastructure/cluster status.infrastructureName")
    return ClusterName(str(api.configuration.host), "its API server: Infrastructure/cluster has no infrastructureName")
