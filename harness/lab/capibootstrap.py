"""A CAPI machine's bootstrap data for the proxy, as the Giant Swarm platform renders it: the
lab stands in for cluster-apps-operator (the Secret ``<cluster>-systemd-proxy``) and for CAPI's
kubeadm bootstrap provider (the KubeadmConfig's ``files`` and ``preKubeadmCommands`` as
cloud-init ``write_files`` and ``runcmd``).

Sources (``docs/linux-nodes-research.md`` §5): cluster-apps-operator's ``containerdProxy``
template (``service/controller/resource/clustersecret/desired.go``, both spellings, alternating);
the ``cluster`` chart's ``cluster.internal.kubeadm.files.proxy`` (the drop-in for containerd and for
the kubelet, ``permissions: "0644"``, ``encoding: base64``); cluster-cloud-director's
``containerdProxyConfig`` (``contentFrom.secret``, then ``systemctl daemon-reload`` and a restart).

What the lab gives the operator: the cluster's effective proxy (Proxy status, so ``noProxy`` with
the cluster's own entries, as the ``cluster`` chart computes it; cluster-apps-operator's Secret
carries its raw global ``noProxy``). The proxy's CA goes where Debian's ``update-ca-certificates``
looks (``/usr/local/share/ca-certificates``), run before the services restart. Not modelled:
Ignition (Flatcar), teleport's drop-in, kubeadm itself (the simulated kubelet is already running
when cloud-init runs, so the bootstrap restarts it).

Each style is one platform's real shape; the broken ones are kept so that the judge is proved to
catch them (``BROKEN``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import yaml
from kubernetes import client

from proxyfleet.core.looplag import poll_until
from proxyfleet.harness.lab import admin
from proxyfleet.harness.lab.clustername import read_cluster_name

SECRET_KEY = "containerdProxy"  # cluster-apps-operator's containerdProxySection
# Where the lab keeps the Secret (on a management cluster: the cluster's organisation namespace).
SECRET_NAMESPACE = "default"
# How long the control plane may take to publish the install's proxy in Proxy status (a readiness
# deadline of the lab's own start, far beyond what it takes, not a judgement).
STATUS_WITHIN = 60.0
CA_PATH = "/usr/local/share/ca-certificates/proxy-ca.crt"
CONTAINERD_DROP_IN = "/etc/systemd/system/containerd.service.d/http-proxy.conf"
KUBELET_DROP_IN = "/etc/systemd/system/kubelet.service.d/http-proxy.conf"


class BootstrapError(ValueError):
    """A bootstrap style this lab does not render, or values the template cannot carry."""


@dataclass(frozen=True)
class Style:
    """What one platform's bootstrap writes and runs."""

    drop_ins: tuple[str, ...]  # the paths that get the Secret's drop-in
    commands: tuple[str, ...]  # preKubeadmCommands, in order
    trusts_ca: bool = True  # the CA file is written (and update-ca-certificates run, if listed)


_RESTARTS = ("systemctl daemon-reload", "systemctl restart containerd", "systemctl restart kubelet")
STYLES: dict[str, Style] = {
    # the cluster chart's files for both services, the CA, daemon-reload and restarts
    "capi": Style((CONTAINERD_DROP_IN, KUBELET_DROP_IN), ("update-ca-certificates", *_RESTARTS)),
    # Flatcar's pre-commands: containerd restarted with no daemon-reload (the drop-ins never load)
    "capi-no-daemon-reload": Style((CONTAINERD_DROP_IN, KUBELET_DROP_IN),
                                   ("update-ca-certificates", "systemctl restart containerd",
                                    "systemctl restart kubelet")),
    # cluster-cloud-director's: the runtime's drop-in only, so the kubelet runs without the proxy
    "capi-containerd-only": Style((CONTAINERD_DROP_IN,),
                                  ("update-ca-certificates", "systemctl daemon-reload",
                                   "systemctl restart containerd")),
    # the CA file written but never extracted into the bundle
    "capi-no-ca-update": Style((CONTAINERD_DROP_IN, KUBELET_DROP_IN), _RESTARTS),
}
BROKEN = tuple(name for name in STYLES if name != "capi")


def style_named(name: str) -> Style:
    """The style ``name``, or a clear error listing those there are."""
    try:
        return STYLES[name]
    except KeyError:
        raise BootstrapError(f"unknown CAPI bootstrap {name!r} (known: {', '.join(STYLES)})") from None


def secret_name(cluster: str) -> str:
    """cluster-apps-operator's name for the Secret: ``<cluster ID>-systemd-proxy``."""
    return f"{cluster}-systemd-proxy"


def systemd_proxy_drop_in(http_proxy: str, https_proxy: str, no_proxy: str) -> str:
    """The Secret's ``containerdProxy``: cluster-apps-operator's template, line for line. Its
    ``Environment="NAME=value"`` quoting carries spaces. It escapes nothing: a ``%`` (a
    percent-encoded password) reaches systemd as a specifier, as on the real platform, and the judge
    sees what systemd makes of it; a ``"``, ``\\`` or newline would break the file's syntax, so
    such a value is refused here, not mis-rendered."""
    values = {"HTTP_PROXY": http_proxy, "HTTPS_PROXY": https_proxy, "NO_PROXY": no_proxy}
    for name, value in values.items():
        if any(c in value for c in '"\\\n'):
            raise BootstrapError(f"{name} holds a quote, backslash or newline: cluster-apps-operator's "
                                 "template does not escape them")
    http, https, none = values.values()
    return ("[Service]\n"
            f'Environment="HTTP_PROXY={http}"\n'
            f'Environment="http_proxy={http}"\n'
            f'Environment="HTTPS_PROXY={https}"\n'
            f'Environment="https_proxy={https}"\n'
            f'Environment="NO_PROXY={none}"\n'
            f'Environment="no_proxy={none}"\n')


def user_data(style: Style, drop_in: str, ca_pem: str) -> str:
    """The machine's ``#cloud-config``: each of the style's drop-ins (the Secret's content, as
    ``contentFrom.secret`` resolves it), the proxy's CA, then its pre-kubeadm commands."""
    encoded = base64.b64encode(drop_in.encode()).decode()
    files: list[dict[str, str]] = [{"path": path, "permissions": "0644", "encoding": "base64", "content": encoded}
                                   for path in style.drop_ins]
    if style.trusts_ca and ca_pem:
        files.append({"path": CA_PATH, "permissions": "0644", "content": ca_pem})
    return "#cloud-config\n" + yaml.safe_dump({"write_files": files, "runcmd": list(style.commands)},
                                              sort_keys=False)


async def publish_secret(api: client.ApiClient, namespace: str = SECRET_NAMESPACE) -> str:
    """Write the Secret ``<cluster>-systemd-proxy`` from the cluster's Proxy status (as
    cluster-apps-operator does from its proxy config) and return its ``containerdProxy`` as read
    back from the API server (as ``contentFrom.secret`` resolves it)."""
    status: dict[str, str] = {}

    async def published() -> bool:
        status.update(await admin.proxy_status(api))
        return bool(status.get("httpProxy") or status.get("httpsProxy"))

    if not await poll_until(published, STATUS_WITHIN, 0.1):  # (moved by the lab's own stall)
        raise BootstrapError("the cluster did not publish its install proxy in Proxy status within "
                             f"{STATUS_WITHIN:.0f} s")
    drop_in = systemd_proxy_drop_in(status.get("httpProxy", ""), status.get("httpsProxy", ""),
                                    status.get("noProxy", ""))
    name = secret_name((await read_cluster_name(api)).name)
    return await admin.put_secret(api, namespace, name, {SECRET_KEY: drop_in}, SECRET_KEY)


__all__ = [
    "BROKEN",
    "CA_PATH",
    "CONTAINERD_DROP_IN",
    "KUBELET_DROP_IN",
    "SECRET_KEY",
    "STYLES",
    "BootstrapError",
    "Style",
    "publish_secret",
    "secret_name",
    "style_named",
    "systemd_proxy_drop_in",
    "user_data",
]
