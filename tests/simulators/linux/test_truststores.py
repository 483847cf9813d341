"""A node's trust store by flavour: what the extract puts in the bundle, what Go reads."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import certifi
import pytest
import trustme

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.linux.truststores import (
    DEBIAN,
    RHCOS,
    RHCOS_LEGACY_BUNDLE,
    debian_local_certificates,
    go_bundle,
    go_roots,
    read_bundle,
    rhcos_extract,
)

UPDATE_CA_CERTIFICATES = shutil.which("update-ca-certificates") or (
    "/usr/sbin/update-ca-certificates" if Path("/usr/sbin/update-ca-certificates").exists() else None)


def put(root: Path, path: str, data: bytes) -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def thumbprints(pem: bytes) -> set[str]:
    return {c.thumbprint for c in certificates_in_bundle(pem)}


def test_rhcos_takes_every_anchor_in_any_form_and_leaves_out_the_blocklisted(tmp_path: Path) -> None:
    system, proxy_ca, other, blocked = (trustme.CA() for _ in range(4))
    put(tmp_path, RHCOS.system_source, system.cert_pem.bytes() + blocked.cert_pem.bytes())
    # MCO's file: a bundle of several CAs, and one listed twice
    put(tmp_path, f"{RHCOS.anchors}/openshift-config-user-ca-bundle.crt",
        proxy_ca.cert_pem.bytes() + other.cert_pem.bytes() + system.cert_pem.bytes())
    der = certificates_in_bundle(other.cert_pem.bytes())[0].der
    put(tmp_path, f"{RHCOS.anchors}/other.der", der)  # DER, no suffix rule
    put(tmp_path, f"{RHCOS.anchors}/notes.txt", b"not a certificate\n")  # ignored
    put(tmp_path, f"{RHCOS.blocklist}/revoked.pem", blocked.cert_pem.bytes())
    bundle = rhcos_extract(tmp_path)
    found = thumbprints(bundle)
    assert found == thumbprints(system.cert_pem.bytes() + proxy_ca.cert_pem.bytes() + other.cert_pem.bytes())
    assert bundle.count(b"BEGIN CERTIFICATE") == 3  # each once


def test_go_reads_the_first_bundle_it_knows(tmp_path: Path) -> None:
    assert go_bundle(tmp_path) is None
    put(tmp_path, RHCOS.bundle, b"")
    assert go_bundle(tmp_path) == RHCOS.bundle
    put(tmp_path, RHCOS_LEGACY_BUNDLE, b"")  # the legacy name comes earlier in Go's list
    assert go_bundle(tmp_path) == RHCOS_LEGACY_BUNDLE
    put(tmp_path, DEBIAN.bundle, b"")
    assert go_bundle(tmp_path) == DEBIAN.bundle


def test_debian_takes_only_crt_files(tmp_path: Path) -> None:
    ca = trustme.CA().cert_pem.bytes()
    put(tmp_path, f"{DEBIAN.anchors}/proxy-ca.crt", ca)
    put(tmp_path, f"{DEBIAN.anchors}/sub/nested.crt", ca)
    put(tmp_path, f"{DEBIAN.anchors}/proxy-ca.pem", ca)
    assert [p.name for p in debian_local_certificates(tmp_path)] == ["proxy-ca.crt", "nested.crt"]


@pytest.mark.skipif(UPDATE_CA_CERTIFICATES is None, reason="needs ca-certificates (apt-get install ca-certificates)")
def test_the_debian_rule_is_update_ca_certificates_own(tmp_path: Path) -> None:
    """Debian's script, run on the node's directories: a .crt is added, a .pem is not."""
    added, ignored = trustme.CA(), trustme.CA()
    put(tmp_path, f"{DEBIAN.anchors}/added.crt", added.cert_pem.bytes())
    put(tmp_path, f"{DEBIAN.anchors}/ignored.pem", ignored.cert_pem.bytes())
    put(tmp_path, "/etc/ca-certificates.conf", b"")
    (tmp_path / "etc/ssl/certs").mkdir(parents=True)
    (tmp_path / "usr/share/ca-certificates").mkdir(parents=True)
    assert UPDATE_CA_CERTIFICATES is not None
    done = subprocess.run(["sh", UPDATE_CA_CERTIFICATES, "--certsconf", str(tmp_path / "etc/ca-certificates.conf"),
                           "--certsdir", str(tmp_path / "usr/share/ca-certificates"),
                           "--localcertsdir", str(tmp_path / DEBIAN.anchors.lstrip("/")),
                           "--etccertsdir", str(tmp_path / "etc/ssl/certs"),
                           "--hooksdir", str(tmp_path / "no-hooks")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bundle = (tmp_path / DEBIAN.bundle.lstrip("/")).read_bytes()
    expected = b"".join(p.read_bytes() for p in debian_local_certificates(tmp_path))
    assert thumbprints(bundle) == thumbprints(expected) == thumbprints(added.cert_pem.bytes())


def test_a_bundle_read_is_one_object_per_content_shared_by_every_reader(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        (root / "etc/ssl/certs").mkdir(parents=True)
        (root / DEBIAN.bundle.lstrip("/")).write_bytes(Path(certifi.where()).read_bytes())
    shared = read_bundle(first, DEBIAN.bundle)
    assert read_bundle(second, DEBIAN.bundle) is shared and len(shared.certificates) > 100  # one copy, not two
    (second / DEBIAN.bundle.lstrip("/")).write_bytes(Path(certifi.where()).read_bytes()[:-1] + b"\n\n")
    assert read_bundle(second, DEBIAN.bundle) is not shared  # other bytes: another object
    assert go_roots(first) is shared
    missing = read_bundle(first, "/etc/no/such.pem")
    assert missing.certificates == () and read_bundle(first, None).certificates == ()
