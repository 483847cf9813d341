"""The system trust store of a Linux node, by flavour, and what its programs read.

An administrator (or the Machine Config Operator) drops a CA into the anchors directory; nobody
trusts it until the flavour's extract command rebuilds the bundle programs read:

- RHCOS, Fedora, RHEL (p11-kit): ``/etc/pki/ca-trust/source/anchors/`` — PEM or DER, any file
  name, a PEM file may hold several certificates — then ``update-ca-trust`` (``extract``) writes
  ``/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem``, which ``/etc/pki/tls/certs/ca-bundle.crt``
  links to. A certificate in ``/etc/pki/ca-trust/source/blocklist/`` is left out.
- Debian: ``/usr/local/share/ca-certificates/`` — only ``*.crt`` files, PEM — then
  ``update-ca-certificates`` appends them to ``/etc/ssl/certs/ca-certificates.crt`` (a Debian node
  runs Debian's own script for that; ``debian_bundle`` here is what it produces, for the judge).

Go (containerd, CRI-O, the kubelet) reads the first of its known bundle files that exists, once
per process: a new CA reaches a running daemon only when it restarts. Sources in
``docs/linux-nodes-research.md`` §8. Not modelled: p11-kit's other outputs (OpenSSL trust
bundle, Java keystore, e-mail and code-signing purposes) and distrust flags inside p11-kit files.
"""

from __future__ import annotations

import hashlib
import ssl
import weakref
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from proxyfleet.core.certificates import Certificate, CertificateFormatError, certificates_in_bundle
from proxyfleet.simulators.egress.client import trust_context

# crypto/x509/root_linux.go: "Possible certificate files; stop after finding one."
GO_BUNDLE_FILES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian/Ubuntu/Gentoo etc.
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora/RHEL 6
    "/etc/ssl/ca-bundle.pem",  # OpenSUSE
    "/etc/pki/tls/cacert.pem",  # OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # CentOS/RHEL 7
    "/etc/ssl/cert.pem",  # Alpine Linux
)


@dataclass(frozen=True)
class TrustLayout:
    """Where one flavour keeps its trust store."""

    flavour: str
    system_source: str  # the distribution's own CAs (a PEM bundle here)
    anchors: str  # where an administrator adds a CA
    extract_command: str
    bundle: str  # what the extract writes and programs read
    suffix: str | None = None  # the only file name suffix the extract takes (Debian: .crt)
    blocklist: str | None = None


RHCOS = TrustLayout("rhcos", "/usr/share/pki/ca-trust-source/ca-bundle.pem", "/etc/pki/ca-trust/source/anchors",
                    "update-ca-trust", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
                    blocklist="/etc/pki/ca-trust/source/blocklist")
DEBIAN = TrustLayout("debian", "/usr/share/ca-certificates/mozilla", "/usr/local/share/ca-certificates",
                     "update-ca-certificates", "/etc/ssl/certs/ca-certificates.crt", suffix=".crt")
# The legacy name RHCOS programs (and Go) find first, a link to the extracted bundle.
RHCOS_LEGACY_BUNDLE = "/etc/pki/tls/certs/ca-bundle.crt"


def _certificates(data: bytes) -> list[Certificate]:
    """Every certificate of a PEM file (several allowed) or one DER certificate; none if neither."""
    try:
        if b"-----BEGIN" in data:
            return certificates_in_bundle(data)
        return [Certificate.from_der(data)]
    except (CertificateFormatError, ValueError):
        return []


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.is_dir() else []


def rhcos_extract(root: Path) -> bytes:
    """What ``update-ca-trust extract`` writes to the server-auth PEM bundle on the node whose
    ``/`` is ``root``: the system CAs and every anchor, minus the blocklisted, each once."""
    assert RHCOS.blocklist is not None
    blocked = {c.thumbprint for f in _files(root / RHCOS.blocklist.lstrip("/")) for c in _certificates(f.read_bytes())}
    sources = [root / RHCOS.system_source.lstrip("/"), *_files(root / RHCOS.anchors.lstrip("/"))]
    seen: set[str] = set()
    out: list[str] = []
    for source in sources:
        if not source.is_file():
            continue
        for certificate in _certificates(source.read_bytes()):
            if certificate.thumbprint in blocked or certificate.thumbprint in seen:
                continue
            seen.add(certificate.thumbprint)
            out.append(ssl.DER_cert_to_PEM_cert(certificate.der))
    return "".join(out).encode()


def debian_local_certificates(root: Path) -> list[Path]:
    """The files ``update-ca-certificates`` adds from the local directory: ``*.crt`` only, in
    ``sort`` order (a ``.pem`` there is never trusted)."""
    return [p for p in _files(root / DEBIAN.anchors.lstrip("/")) if p.name.endswith(".crt")]


def go_bundle(root: Path) -> str | None:
    """The bundle file a Go program on the node reads (the first of ``GO_BUNDLE_FILES`` there)."""
    return next((f for f in GO_BUNDLE_FILES if (root / f.lstrip("/")).exists()), None)



class BundleTrust:
    """The CAs a program trusts after reading one bundle file: what it read, as a TLS context.

    One object per distinct content (``read_bundle``), shared by every node and process that read
    the same bytes: a thousand nodes with the distribution's ~150 CAs hold one copy, not a thousand.
    """

    def __init__(self, path: str | None, data: bytes) -> None:
        self.path = path  # the node path it came from (None: no bundle file existed)
        self.certificates = tuple(_certificates(data)) if data else ()

    @cached_property
    def context(self) -> ssl.SSLContext:
        """An SSL context trusting exactly these CAs (none: every certificate unknown)."""
        return trust_context([c.der for c in self.certificates])


_BUNDLES: weakref.WeakValueDictionary[tuple[str | None, str], BundleTrust] = weakref.WeakValueDictionary()


def read_bundle(root: Path, path: str | None) -> BundleTrust:
    """What a program on the node at ``root`` trusts after reading the bundle at node ``path``
    now (a missing file, or ``None``, trusts nothing)."""
    try:
        data = (root / path.lstrip("/")).read_bytes() if path is not None else b""
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        data = b""
    key = (path, hashlib.sha256(data).hexdigest())
    found = _BUNDLES.get(key)
    if found is None:
        found = _BUNDLES[key] = BundleTrust(path, data)
    return found


def go_roots(root: Path) -> BundleTrust:
    """The system roots a Go program (containerd, CRI-O, the kubelet) starting now loads."""
    return read_bundle(root, go_bundle(root))
