"""A fresh Linux node's root directory, by flavour: the files a proxy reconciler and the judge meet
before anyone configured a proxy.

Two flavours, the two kinds of Linux worker the proxy reaches:

- ``rhcos`` — an OpenShift worker (Red Hat Enterprise Linux CoreOS): CRI-O and the kubelet from
  ``/usr/lib/systemd/system``, the kubelet's unit reading ``/etc/os-release`` and
  ``/etc/node-sizing.env`` as *required* environment files (a node without them cannot start its
  kubelet: real, and the simulated manager refuses the same way), ``/etc/mco`` for the Machine
  Config Operator's ``proxy.env``, and the p11-kit trust store already extracted.
- ``debian`` — a CAPI worker (kubeadm on Debian/Ubuntu, the Giant Swarm seed): containerd and the
  kubelet with kubeadm's ``10-kubeadm.conf`` drop-in, and the ``ca-certificates`` trust store
  (``/usr/share/ca-certificates/mozilla/*.crt`` listed in ``/etc/ca-certificates.conf``, the bundle
  built from them), laid out so Debian's own ``update-ca-certificates`` runs on it unchanged.

The units keep what decides a service's environment (every ``Environment=``/``EnvironmentFile=``
line of the real ones, in their order) and a short ``ExecStart``; the rest of the real units
(dependencies, limits, the kubelet's long command line) is left out: the service manager does not
model ordering or run programs. Sources: docs/linux-nodes-research.md §1, §5, §8, and the units in
openshift/machine-config-operator (``templates/*/01-*-kubelet/_base/units/kubelet.service.yaml``),
cri-o (``contrib/systemd/crio.service``), containerd (``containerd.service``) and kubeadm's
packaging (``10-kubeadm.conf``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.kubelet import NodeIdentity
from proxyfleet.simulators.linux.truststores import DEBIAN, RHCOS, RHCOS_LEGACY_BUNDLE, TrustLayout, rhcos_extract

# The kubelet's unit as the MCO renders it on a worker: its environment lines, in order.
RHCOS_KUBELET = """[Unit]
Description=Kubernetes Kubelet
Requires=crio.service
After=network-online.target crio.service

[Service]
Type=notify
EnvironmentFile=/etc/os-release
EnvironmentFile=-/etc/kubernetes/kubelet-workaround
EnvironmentFile=-/etc/kubernetes/kubelet-env
EnvironmentFile=/etc/node-sizing.env
ExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf --node-labels=node.openshift.io/os_id=${ID}
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
RHCOS_CRIO = """[Unit]
Description=Container Runtime Interface for OCI (CRI-O)
Wants=network-online.target
Before=kubelet.service
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-/etc/sysconfig/crio
Environment=GOTRACEBACK=crash
ExecStart=/usr/bin/crio $CRIO_CONFIG_OPTIONS $CRIO_RUNTIME_OPTIONS $CRIO_STORAGE_OPTIONS $CRIO_NETWORK_OPTIONS
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
CONTAINERD = """[Unit]
Description=containerd container runtime
After=network.target

[Service]
ExecStart=/usr/local/bin/containerd
Restart=always
Delegate=yes
KillMode=process

[Install]
WantedBy=multi-user.target
"""
KUBEADM_KUBELET = """[Unit]
Description=kubelet: The Kubernetes Node Agent
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
# kubeadm's drop-in (its packages install it): how kubeadm hands the kubelet its flags.
KUBEADM_DROP_IN = """[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \
--kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
"""


# The MCO's /etc/mco/proxy.env on a cluster without a proxy: its comment alone.
# RHCOS's boot-time extraction (the ignition-integration package's unit, key lines): MCO restarts it
# after writing the user CA (its NodeDisruptionPolicy default; older releases rebooted instead and
# relied on it running at boot). The FCOS copy has ConditionFirstBoot=true; RHCOS's is taken to have
# none: the unit shows in `systemd-analyze blame` of a worker's second boot, and before 4.14 a CA
# change reached RHCOS nodes by a reboot alone (an inference from that evidence, not a file read).
COREOS_UPDATE_CA_TRUST = """[Unit]
Description=Run update-ca-trust
ConditionDirectoryNotEmpty=/etc/pki/ca-trust/source/anchors/
DefaultDependencies=no
After=local-fs.target
Requires=local-fs.target

[Service]
ExecStart=/usr/bin/update-ca-trust extract
Type=oneshot
RemainAfterExit=yes

[Install]
WantedBy=basic.target
"""

MCO_PROXY_ENV = "".join(f"# {line}\n" for line in (
    "Proxy environment variables will be populated in this file. Properly",
    "url encoded passwords with special characters will use '%<HEX><HEX>'.",
    "Systemd requires that any % used in a password be represented as",
    "%% in a unit file since % is a prefix for macros; this restriction does not",
    "apply for environment files. Templates that need the proxy set should use",
    "'EnvironmentFile=/etc/mco/proxy.env'."))


@dataclass(frozen=True)
class Flavour:
    """One kind of Linux worker: its files, its trust store, the services it starts at boot."""

    name: str
    os_release: str
    trust: TrustLayout
    files: Mapping[str, str]  # node path -> text (units, drop-ins, environment files)
    runtime: str  # the container runtime's service
    enabled: tuple[str, ...]  # started at boot, in this order (the runtime before the kubelet)
    identity: NodeIdentity  # what its kubelet registers
    proxy_env_directory: str | None = None  # where the MCO's proxy.env goes (RHCOS)
    # A oneshot unit that extracts the trust bundle at every boot, before the services, when the
    # anchors directory is not empty; ``systemctl (re)start`` of it extracts again (RHCOS)
    trust_unit: str | None = None

    @property
    def services(self) -> tuple[str, str]:
        """The two services a cluster-wide proxy must reach: the runtime (pulls) and the kubelet."""
        return self.runtime, "kubelet.service"


RHCOS_NODE = Flavour(
    name="rhcos",
    os_release='NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nID_LIKE="rhel fedora"\nVERSION_ID="4.17"\n'
               'PLATFORM_ID="platform:el9"\nVARIANT_ID=coreos\n',
    trust=RHCOS,
    files={
        "/usr/lib/systemd/system/kubelet.service": RHCOS_KUBELET,
        "/usr/lib/systemd/system/crio.service": RHCOS_CRIO,
        # written by the MCO's kubelet-auto-node-size unit before the kubelet starts
        "/etc/node-sizing.env": "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\n",
        # on every node from install, proxy or not (the MCO's etc-mco-proxy.yaml base template, 0644)
        "/etc/mco/proxy.env": MCO_PROXY_ENV,
        "/usr/lib/systemd/system/coreos-update-ca-trust.service": COREOS_UPDATE_CA_TRUST,
    },
    runtime="crio.service",
    enabled=("crio.service", "kubelet.service"),
    # an OpenShift 4.17 worker's Node: the MCO's os_id label, CRI-O's version
    identity=NodeIdentity("linux", "Red Hat Enterprise Linux CoreOS 417.94.202410211619-0",
                          "5.14.0-427.40.1.el9_4.x86_64", "cri-o://1.30.6",
                          {"node.openshift.io/os_id": "rhcos", "node-role.kubernetes.io/worker": ""}),
    proxy_env_directory="/etc/mco",
    trust_unit="coreos-update-ca-trust.service",
)
DEBIAN_NODE = Flavour(
    name="debian",
    os_release='PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
               'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n',
    trust=DEBIAN,
    files={
        "/usr/lib/systemd/system/containerd.service": CONTAINERD,
        "/usr/lib/systemd/system/kubelet.service": KUBEADM_KUBELET,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": KUBEADM_DROP_IN,
        "/var/lib/kubelet/kubeadm-flags.env": 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint='
                                              'unix:///run/containerd/containerd.sock"\n',
    },
    runtime="containerd.service",
    enabled=("containerd.service", "kubelet.service"),
    identity=NodeIdentity("linux", "Debian GNU/Linux 12 (bookworm)", "6.1.0-26-amd64", "containerd://1.7.0", {}),
)
FLAVOURS = {flavour.name: flavour for flavour in (RHCOS_NODE, DEBIAN_NODE)}


class FlavourError(ValueError):
    """A node flavour this simulator does not know."""


def flavour_named(name: str) -> Flavour:
    """The flavour called ``name``, or a clear error naming those there are."""
    try:
        return FLAVOURS[name]
    except KeyError:
        raise FlavourError(f"no Linux node flavour {name!r}; there are: {', '.join(sorted(FLAVOURS))}") from None


def _debian_name(index: int, subject: str) -> str:
    """A file name for one of the distribution's CAs, as the package names them (its CN, spaces as _)."""
    common = next((part[3:] for part in subject.split(", ") if part.startswith("CN=")), f"ca-{index}")
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in common)
    return f"{index:03d}-{safe}.crt"


def trust_files(flavour: Flavour, system_cas_pem: bytes) -> dict[str, bytes]:
    """The distribution's trust store before any anchor is added: its CAs where the flavour keeps
    them (RHCOS one PEM bundle, Debian one ``.crt`` each, listed in ``/etc/ca-certificates.conf``)."""
    if flavour.trust is RHCOS:
        return {RHCOS.system_source: system_cas_pem}
    files: dict[str, bytes] = {}
    listed = []
    for index, certificate in enumerate(certificates_in_bundle(system_cas_pem)):
        name = _debian_name(index, certificate.subject)
        files[f"{DEBIAN.system_source}/{name}"] = certificate.pem().encode()
        listed.append(f"mozilla/{name}")
    files["/etc/ca-certificates.conf"] = ("# Debian's list of the CAs it trusts (ca-certificates)\n"
                                          + "".join(f"{line}\n" for line in listed)).encode()
    # what update-ca-certificates built from them at install
    files[DEBIAN.bundle] = b"".join(files[f"{DEBIAN.system_source}/{line[8:]}"] for line in listed)
    return files


def create_root(root: Path, flavour: Flavour, system_cas_pem: bytes, hostname: str) -> None:
    """Lay out a fresh node of ``flavour`` under ``root`` (which must be empty or absent)."""
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"the node root {root} is not empty")
    texts = {**flavour.files, "/etc/os-release": flavour.os_release, "/etc/hostname": f"{hostname}\n"}
    blobs = {**{path: text.encode() for path, text in texts.items()}, **trust_files(flavour, system_cas_pem)}
    for directory in ("/etc/systemd/system", "/run/systemd/system", flavour.trust.anchors, "/var/log", "/tmp",
                      *([flavour.proxy_env_directory] if flavour.proxy_env_directory else [])):
        (root / directory.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for path, blob in blobs.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    if flavour.trust is RHCOS:
        assert RHCOS.blocklist is not None
        (root / RHCOS.blocklist.lstrip("/")).mkdir(parents=True, exist_ok=True)
        bundle = root / RHCOS.bundle.lstrip("/")
        bundle.parent.mkdir(parents=True, exist_ok=True)
        bundle.write_bytes(rhcos_extract(root))
        legacy = root / RHCOS_LEGACY_BUNDLE.lstrip("/")
        legacy.parent.mkdir(parents=True, exist_ok=True)
        # a relative link, as the package's: it resolves inside the node's root, wherever that is
        legacy.symlink_to(os.path.relpath(RHCOS.bundle, os.path.dirname(RHCOS_LEGACY_BUNDLE)))
