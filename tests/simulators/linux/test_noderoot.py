"""A fresh Linux node by flavour: the services it boots with their real units' environment, and a
trust store its distribution's own tools agree with."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import certifi
import pytest

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.linux.noderoot import (
    DEBIAN_NODE,
    RHCOS_NODE,
    FlavourError,
    create_root,
    flavour_named,
)
from proxyfleet.simulators.linux.servicemanager import ServiceManager, job_failed
from proxyfleet.simulators.linux.truststores import DEBIAN, RHCOS, RHCOS_LEGACY_BUNDLE, go_bundle

SYSTEM_CAS = Path(certifi.where()).read_bytes()
UPDATE_CA_CERTIFICATES = shutil.which("update-ca-certificates") or (
    "/usr/sbin/update-ca-certificates" if Path("/usr/sbin/update-ca-certificates").exists() else None)


def thumbprints(pem: bytes) -> list[str]:
    return [c.thumbprint for c in certificates_in_bundle(pem)]


def test_an_openshift_worker_boots_crio_then_the_kubelet_with_its_units_environment(tmp_path: Path) -> None:
    create_root(tmp_path, RHCOS_NODE, SYSTEM_CAS, "worker-a")
    systemd = ServiceManager(tmp_path, hostname="worker-a")
    outcomes = systemd.boot(RHCOS_NODE.enabled)
    assert list(outcomes) == ["crio.service", "kubelet.service"]
    assert all(o.code == 0 for o in outcomes.values()), outcomes
    kubelet = systemd.running["kubelet.service"].environment
    assert kubelet["ID"] == "rhcos" and kubelet["SYSTEM_RESERVED_MEMORY"] == "1Gi"  # its required files
    assert systemd.running["crio.service"].environment["GOTRACEBACK"] == "crash"
    assert not any(k.lower().endswith("_proxy") for e in (kubelet, systemd.running["crio.service"].environment)
                   for k in e)  # nobody configured a proxy yet
    assert RHCOS_NODE.services == ("crio.service", "kubelet.service")


def test_a_kubelet_whose_required_environment_file_is_gone_does_not_start(tmp_path: Path) -> None:
    create_root(tmp_path, RHCOS_NODE, SYSTEM_CAS, "worker-a")
    (tmp_path / "etc/node-sizing.env").unlink()
    outcomes = ServiceManager(tmp_path).boot(RHCOS_NODE.enabled)
    assert outcomes["crio.service"].code == 0
    assert outcomes["kubelet.service"].code == 1
    assert outcomes["kubelet.service"].stderr == job_failed("kubelet.service") + "\n"


def test_a_reboot_reads_a_drop_in_written_without_daemon_reload(tmp_path: Path) -> None:
    # The MCO's way: proxy.env and the drop-in written, then drain and reboot (no daemon-reload).
    create_root(tmp_path, RHCOS_NODE, SYSTEM_CAS, "worker-a")
    systemd = ServiceManager(tmp_path)
    systemd.boot(RHCOS_NODE.enabled)
    (tmp_path / "etc/mco/proxy.env").write_text("HTTP_PROXY=http://proxy.corp.internal:3128\n")
    for unit in RHCOS_NODE.services:
        drop_in = tmp_path / f"etc/systemd/system/{unit}.d/10-mco-default-env.conf"
        drop_in.parent.mkdir(parents=True)
        drop_in.write_text("[Service]\nEnvironmentFile=/etc/mco/proxy.env\n")
    assert "HTTP_PROXY" not in systemd.running["kubelet.service"].environment  # running: as it started
    systemd.boot(RHCOS_NODE.enabled)
    for unit in RHCOS_NODE.services:
        assert systemd.running[unit].environment["HTTP_PROXY"] == "http://proxy.corp.internal:3128"
        assert not systemd.needs_daemon_reload(unit)


def test_a_capi_worker_boots_containerd_then_the_kubelet_with_kubeadms_drop_in(tmp_path: Path) -> None:
    create_root(tmp_path, DEBIAN_NODE, SYSTEM_CAS, "worker-b")
    systemd = ServiceManager(tmp_path)
    assert all(o.code == 0 for o in systemd.boot(DEBIAN_NODE.enabled).values())
    kubelet = systemd.running["kubelet.service"].environment
    assert kubelet["KUBELET_CONFIG_ARGS"] == "--config=/var/lib/kubelet/config.yaml"
    assert kubelet["KUBELET_KUBEADM_ARGS"].startswith("--container-runtime-endpoint=unix:///run/containerd/")
    assert DEBIAN_NODE.services == ("containerd.service", "kubelet.service")


def test_an_openshift_workers_trust_store_is_extracted_and_found_by_go(tmp_path: Path) -> None:
    create_root(tmp_path, RHCOS_NODE, SYSTEM_CAS, "worker-a")
    assert go_bundle(tmp_path) == RHCOS_LEGACY_BUNDLE
    legacy = tmp_path / RHCOS_LEGACY_BUNDLE.lstrip("/")
    assert legacy.is_symlink() and not os.readlink(legacy).startswith("/")  # resolves inside the node
    assert legacy.resolve() == (tmp_path / RHCOS.bundle.lstrip("/")).resolve()
    extracted = thumbprints(legacy.read_bytes())
    assert extracted == list(dict.fromkeys(thumbprints(SYSTEM_CAS))) and len(extracted) > 100
    assert (tmp_path / RHCOS.anchors.lstrip("/")).is_dir() and not any((tmp_path / RHCOS.anchors.lstrip("/")).iterdir())
    assert (tmp_path / "etc/mco/proxy.env").read_text().startswith("# Proxy environment variables")  # the MCO's


@pytest.mark.skipif(UPDATE_CA_CERTIFICATES is None, reason="needs Debian's update-ca-certificates (ca-certificates)")
def test_a_capi_workers_bundle_is_what_debians_own_script_builds_from_its_files(tmp_path: Path) -> None:
    root = tmp_path / "node"
    create_root(root, DEBIAN_NODE, SYSTEM_CAS, "worker-b")
    installed = (root / DEBIAN.bundle.lstrip("/")).read_bytes()
    assert go_bundle(root) == DEBIAN.bundle and len(thumbprints(installed)) > 100
    assert UPDATE_CA_CERTIFICATES is not None
    done = subprocess.run(["sh", UPDATE_CA_CERTIFICATES, "--fresh", "--certsconf", str(root / "etc/ca-certificates.conf"),
                           "--certsdir", str(root / "usr/share/ca-certificates"),
                           "--localcertsdir", str(root / DEBIAN.anchors.lstrip("/")),
                           "--etccertsdir", str(root / "etc/ssl/certs"), "--hooksdir", str(tmp_path / "no-hooks")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert thumbprints((root / DEBIAN.bundle.lstrip("/")).read_bytes()) == thumbprints(installed)


def test_an_unknown_flavour_and_a_used_root_are_refused(tmp_path: Path) -> None:
    assert flavour_named("rhcos") is RHCOS_NODE
    with pytest.raises(FlavourError, match="no Linux node flavour 'windows'; there are: debian, rhcos"):
        flavour_named("windows")
    (tmp_path / "leftover").write_text("")
    with pytest.raises(FileExistsError, match="is not empty"):
        create_root(tmp_path, DEBIAN_NODE, SYSTEM_CAS, "worker-b")
