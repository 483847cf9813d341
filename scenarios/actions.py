"""Administrator actions the scenarios share, each one ``Conformance.step``."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from proxyfleet.harness.conformance import CheckResult, Conformance
from proxyfleet.harness.conformance.judge import Bundle
from proxyfleet.harness.lab import DEFAULT_NO_PROXY
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.windows.node import WindowsNode

AnyNode = WindowsNode | LinuxNode


async def join(conformance: Conformance, nodes: Sequence[AnyNode] | None = None,
               name: str = "instances join") -> list[CheckResult]:
    """Hand nodes to the reconciler (windows-instances, linux-instances): every node by default."""
    members = conformance.every_node if nodes is None else nodes
    return await conformance.step(name, lambda: conformance.add_instances(members))


def last_of_each_kind(conformance: Conformance) -> list[AnyNode]:
    """The last node of each kind that has more than one (the others stay members): what a
    membership scenario adds late or removes, so that a mixed fleet has both kinds' joins and
    clean-ups judged."""
    return [kind[-1] for kind in (conformance.nodes, conformance.linux_nodes) if len(kind) > 1]


def one_of_each_kind(conformance: Conformance, last: bool = False) -> tuple[list[AnyNode], str]:
    """The first (or ``last``) node of each kind the fleet has, and how a step names them: a fault
    that hits one instance hits one Windows and one Linux node on a mixed fleet."""
    kinds = [kind for kind in (conformance.nodes, conformance.linux_nodes) if kind]
    named = "one instance" if len(kinds) == 1 else "one instance of each kind"
    return [kind[-1 if last else 0] for kind in kinds], named


async def add_proxy(conformance: Conformance, no_proxy: str = DEFAULT_NO_PROXY) -> list[CheckResult]:
    """Runtime add: publish the proxy's CA as the trusted bundle, then set the proxy."""
    return await conformance.step("proxy added", lambda: publish_proxy(conformance, no_proxy))


async def publish_proxy(conformance: Conformance, no_proxy: str = DEFAULT_NO_PROXY) -> None:
    """The runtime add's action: the proxy's CA as the trusted bundle, then the proxy."""
    lab = conformance.lab
    await conformance.set_trusted_ca([lab.mitm_ca_pem])
    await conformance.set_proxy(lab.proxy_url, no_proxy, https_url=lab.proxy_https_url)


async def change_proxy(conformance: Conformance, url: str, no_proxy: str = DEFAULT_NO_PROXY,
                       name: str = "proxy changed") -> list[CheckResult]:
    return await conformance.step(name, lambda: conformance.set_proxy(url, no_proxy))


async def remove_proxy(conformance: Conformance, trusted_ca: str | Bundle | None = Bundle.SCENARIOS,
                       name: str = "proxy removed") -> list[CheckResult]:
    """The company retires its proxy: the network opens direct egress (a lab action, taken in the
    open), then the administrator removes the proxy from the cluster."""

    async def action() -> None:
        conformance.lab.set_egress_firewall(False)
        await conformance.set_proxy("", trusted_ca=trusted_ca)

    return await conformance.step(name, action)


def linux_anchor_removed(ca_pem: bytes) -> str:
    """Out of band on a Linux node, as root: every trust anchor that holds the proxy's CA deleted,
    and the bundle extracted again without it (``update-ca-trust`` on RHCOS, Debian's
    ``update-ca-certificates --fresh``) — found by the CA's own text, wherever a reconciler put it."""
    marker = shlex.quote(ca_pem.decode().splitlines()[2])  # a line of the certificate's body
    return ("for f in /etc/pki/ca-trust/source/anchors/* /usr/local/share/ca-certificates/*; do\n"
            f"  if [ -f \"$f\" ] && grep -qF -- {marker} \"$f\"; then rm -f -- \"$f\" || exit 1; fi\n"
            "done\n"
            "if command -v update-ca-trust >/dev/null; then update-ca-trust extract || exit 1\n"
            "else update-ca-certificates --fresh >/dev/null || exit 1; fi\n")


def linux_runtime_unproxied() -> str:
    """Out of band on a Linux node, as root: the container runtime's local unit overrides
    (``/etc/systemd/system/<runtime>.service.d``, where a proxy drop-in goes) deleted, systemd
    reloaded and the runtime restarted — it runs without the proxy until the reconciler repairs it."""
    return ("if systemctl is-active crio >/dev/null 2>&1; then runtime=crio; else runtime=containerd; fi\n"
            'rm -rf -- "/etc/systemd/system/$runtime.service.d" || exit 1\n'
            'systemctl daemon-reload && systemctl restart "$runtime"\n')
