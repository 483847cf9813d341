"""The lab's certificate authorities, all from trustme.

* the *public* CA signs the origins' certificates; every node trusts it as a built-in root and
  the proxy trusts it upstream (it plays the public web PKI);
* the proxy's *MITM* CA (RSA, because mitmproxy reuses the CA key for the leaves it forges) is
  trusted by a node only after the reconciler imports it;
* the *cluster* CA signs the API server's certificate (see proxyfleet.simulators.controlplane.cluster).

Beside them, the real public roots (Mozilla's list, as ``certifi`` ships it): what a Linux
distribution's trust store holds out of the box, and what a Windows node's shares with it.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

import certifi
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from proxyfleet.core.certificates import Certificate, certificates_in_bundle


@functools.cache
def public_roots() -> tuple[Certificate, ...]:
    """The Mozilla root list as ``certifi`` ships it."""
    with open(certifi.where(), "rb") as handle:
        return tuple(certificates_in_bundle(handle.read()))


def system_bundle_pem(lab_public_ca_pem: str) -> str:
    """The cluster's system trust bundle: the public roots plus the lab's public CA."""
    return "".join(c.pem() for c in public_roots()) + lab_public_ca_pem


def new_public_ca() -> trustme.CA:
    return trustme.CA(organization_name="proxyfleet public roots")


def new_mitm_ca(name: str = "proxyfleet corporate proxy") -> trustme.CA:
    return trustme.CA(organization_name=name, key_type=trustme.KeyType.RSA)


def renewed_ca(ca: trustme.CA) -> trustme.CA:
    """``ca`` renewed the way a corporate PKI renews an expiring proxy CA: the same subject
    (distinguished name), a new RSA key, serial number and validity — so a new thumbprint. Only a
    reconciler that removes certificates by thumbprint keeps the renewed one when the old goes."""
    old = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = dt.datetime.now(dt.UTC)
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                          encipher_only=False, decipher_only=False)
    certificate = (
        x509.CertificateBuilder().subject_name(old.subject).issuer_name(old.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=9), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256()))
    return trustme.CA.from_pem(
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                          serialization.NoEncryption()))


def write_certificate(ca: trustme.CA, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ca.cert_pem.bytes())
    return path
