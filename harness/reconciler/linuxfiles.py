"""What a Linux node's files should hold for the cluster's proxy: the Machine Config Operator's
layout, rendered from the same ``DesiredState`` the Windows nodes get.

What the MCO writes (openshift/machine-config-operator; docs/linux-nodes-research.md §1-§4):

- ``/etc/mco/proxy.env``: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY`` from the Proxy's
  status, one ``KEY=value`` line each, written only when set; with no proxy, only its comment.
- ``/etc/systemd/system/{crio,kubelet}.service.d/10-mco-default-env.conf``: ``[Service]``
  ``EnvironmentFile=/etc/mco/proxy.env`` — an environment file because a percent-encoded password's
  ``%`` would be a specifier in a unit file (MCO commit fbf712a5f); removed when there is no proxy.
- ``/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt`` (mode 0600): the
  trusted CA bundle, then ``update-ca-trust`` and a restart of CRI-O.
- A proxy change drains and reboots the node (every unit or ``proxy.env`` change does by default).

Where this reference does better than the MCO, and why:

- ``proxy.env`` carries the lower-case spellings too (``http_proxy``, ``https_proxy``,
  ``no_proxy``): Go reads either, but libcurl programs (rpm-ostreed, whose drop-in the MCO also
  writes, and anything a node runs with curl) read plain-HTTP proxies only as ``http_proxy``.
  The CAPI seed's drop-ins carry both spellings for the same reason.
- Each value is double-quoted with ``"``, ``\\``, ````` and ``$`` escaped, so systemd reads back
  exactly the value given (the MCO writes values bare: a backslash in a password is eaten).
- With no CA bundle the anchor is removed, not left empty.
- ``proxy.env`` is 0600, not 0644: it may carry a proxy's password, and only systemd (root) reads it.

Debian (a CAPI node) gets the same files where Debian keeps them: the anchor in
``/usr/local/share/ca-certificates/`` (``.crt``, 0644: ``update-ca-certificates`` reads only those),
containerd for CRI-O, ``/etc/mco`` created for the environment file — which, having no MCO to own
it there, goes when the proxy goes (on RHCOS it stays, comment only, as the MCO keeps it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxyfleet.core.contract import PROXY_VARIABLES

PROXY_ENV = "/etc/mco/proxy.env"
DROP_IN = "10-mco-default-env.conf"
DROP_IN_TEXT = f"[Service]\nEnvironmentFile={PROXY_ENV}\n"
PROXY_ENV_HEADER = (
    "# Proxy environment variables will be populated in this file. Properly\n"
    "# url encoded passwords with special characters will use '%<HEX><HEX>'.\n"
    "# Systemd requires that any % used in a password be represented as\n"
    "# %% in a unit file since % is a prefix for macros; this restriction does not\n"
    "# apply for environment files. Templates that need the proxy set should use\n"
    f"# 'EnvironmentFile={PROXY_ENV}'.\n")
# systemd's SHELL_NEED_ESCAPE: what a double-quoted environment-file value must escape.
_ESCAPED = '"\\`$'


@dataclass(frozen=True)
class Flavour:
    """Where one kind of Linux node keeps what the reconciler writes, and what reads it."""

    name: str
    anchor: str
    anchor_mode: int
    extract: str  # the command that rebuilds the bundle programs read
    runtime: str  # the container runtime's service
    # Whether the node keeps proxy.env without a proxy (RHCOS: the MCO's from install); elsewhere
    # it is the reconciler's own, and goes with the proxy.
    keeps_proxy_env: bool = True

    @property
    def services(self) -> tuple[str, str]:
        """The services the proxy must reach, in the order they restart."""
        return self.runtime, "kubelet.service"


RHCOS = Flavour("rhcos", "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", 0o600,
                "update-ca-trust", "crio.service")
DEBIAN = Flavour("debian", "/usr/local/share/ca-certificates/openshift-config-user-ca-bundle.crt", 0o644,
                 "update-ca-certificates", "containerd.service", keeps_proxy_env=False)
FLAVOURS = {f.name: f for f in (RHCOS, DEBIAN)}


@dataclass(frozen=True)
class FileSpec:
    """One file's wanted content (None: it must not exist) and mode."""

    content: str | None
    mode: int = 0o644


def environment_file_value(value: str) -> str:
    """``value`` as an environment file's double-quoted value systemd reads back unchanged."""
    return '"' + "".join("\\" + c if c in _ESCAPED else c for c in value) + '"'


def proxy_env_text(environment: Mapping[str, str | None]) -> str:
    """``/etc/mco/proxy.env`` for these variables (upper-case names; None: not set): the MCO's
    comment, then each set variable in both spellings."""
    lines = [PROXY_ENV_HEADER]
    for name in PROXY_VARIABLES:
        value = environment.get(name)
        if value:
            quoted = environment_file_value(value)
            lines.append(f"{name}={quoted}\n{name.lower()}={quoted}\n")
    return "".join(lines)


def node_files(environment: Mapping[str, str | None], bundle_pem: str, flavour: Flavour) -> dict[str, FileSpec]:
    """Every file the reconciler owns on a node of ``flavour``, as it should be."""
    configured = any(environment.get(name) for name in PROXY_VARIABLES)
    kept = configured or flavour.keeps_proxy_env
    files = {PROXY_ENV: FileSpec(proxy_env_text(environment) if kept else None, 0o600)}
    for service in flavour.services:
        files[f"/etc/systemd/system/{service}.d/{DROP_IN}"] = FileSpec(DROP_IN_TEXT if configured else None)
    files[flavour.anchor] = FileSpec(bundle_pem if bundle_pem.strip() else None, flavour.anchor_mode)
    return files
