"""Certificates and PEM bundles with the properties Windows shows: SHA-1 upper-case thumbprints,
.NET-style distinguished names, and a clear error for anything that is not a certificate."""

from __future__ import annotations

import hashlib

import pytest
import trustme
from cryptography import x509
from cryptography.x509.oid import NameOID

from proxyfleet.core.certificates import (
    Certificate,
    CertificateFormatError,
    certificates_in_bundle,
    pem_blocks,
    windows_name,
)


def test_a_pem_certificate_has_the_windows_properties() -> None:
    ca = trustme.CA(organization_name="Acme Corp")
    cert = Certificate.from_pem(ca.cert_pem.bytes())
    assert cert.thumbprint == hashlib.sha1(cert.der).hexdigest().upper()
    assert cert.is_ca
    assert "O=Acme Corp" in cert.subject and cert.subject == cert.issuer  # self-signed root
    assert Certificate.from_pem(cert.pem().encode()) == cert  # PEM round trip


def test_names_render_most_specific_first_with_windows_abbreviations_and_quoting() -> None:
    name = x509.Name([
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        x509.NameAttribute(NameOID.STATE_OR_PROVINCE_NAME, "Texas"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'Acme, "Inc"'),
        x509.NameAttribute(NameOID.COMMON_NAME, "Proxy CA"),
    ])
    assert windows_name(name) == 'CN=Proxy CA, O="Acme, ""Inc""", S=Texas, C=US'


def test_a_bundle_yields_every_certificate_in_order() -> None:
    first, second = trustme.CA(), trustme.CA()
    bundle = first.cert_pem.bytes() + b"\n# a comment between blocks\n" + second.cert_pem.bytes()
    found = certificates_in_bundle(bundle)
    assert [c.der for c in found] == [
        Certificate.from_pem(first.cert_pem.bytes()).der, Certificate.from_pem(second.cert_pem.bytes()).der]
    assert len(pem_blocks(bundle)) == 2


def test_trusted_certificate_blocks_count_as_certificates() -> None:
    pem = trustme.CA().cert_pem.bytes().replace(b"BEGIN CERTIFICATE", b"BEGIN TRUSTED CERTIFICATE")
    pem = pem.replace(b"END CERTIFICATE", b"END TRUSTED CERTIFICATE")
    assert len(certificates_in_bundle(pem)) == 1


@pytest.mark.parametrize(("data", "message"), [
    (b"not a certificate", "no PEM certificate block"),
    (b"-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n", "corrupt PEM block"),
    (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a DER certificate"),
])
def test_bad_pem_is_a_specific_error(data: bytes, message: str) -> None:
    with pytest.raises(CertificateFormatError, match=message):
        Certificate.from_pem(data)


def test_the_public_root_set_parses_without_a_warning() -> None:
    """certifi ships roots with a negative serial number; cryptography 42+ warns about them when read,
    which every command printed on its output (the lab publishes the whole set)."""
    import warnings

    import certifi

    with open(certifi.where(), "rb") as handle, warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = [Certificate._parse(der) for der in pem_blocks(handle.read())]  # not the cached parse
    assert len(parsed) > 100
