"""X.509 certificates and PEM bundles, with the properties Windows shows for them.

Thumbprints are SHA-1 in upper-case hex, like ``X509Certificate2.Thumbprint``. Subjects and
issuers are rendered as .NET renders ``X500DistinguishedName.Name``: most specific RDN first,
``", "`` between RDNs, Windows' attribute abbreviations (``S=`` for stateOrProvince, ``E=`` for
email). Shared by the reconciler, the judge and the simulated nodes.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
import re
import warnings
from dataclasses import dataclass

from cryptography import x509
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import NameOID

_PEM_BLOCK = re.compile(
    rb"-----BEGIN (?:TRUSTED |X509 )?CERTIFICATE-----\s*(.+?)\s*-----END (?:TRUSTED |X509 )?CERTIFICATE-----",
    re.DOTALL,
)
_ABBREVIATIONS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "S",
    NameOID.EMAIL_ADDRESS: "E",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.SERIAL_NUMBER: "SERIALNUMBER",
}



class CertificateFormatError(ValueError):
    """The bytes are neither a DER certificate nor a PEM file holding one."""

    reason = "CertificateFormatError"


def windows_name(name: x509.Name) -> str:
    """Render a distinguished name the way .NET's ``X500DistinguishedName.Name`` does."""
    parts: list[str] = []
    for rdn in reversed(name.rdns):
        for attribute in rdn:
            key = _ABBREVIATIONS.get(attribute.oid, f"OID.{attribute.oid.dotted_string}")
            value = str(attribute.value)
            if any(char in value for char in ',+="\n<>#;'):
                value = '"' + value.replace('"', '""') + '"'
            parts.append(f"{key}={value}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Certificate:
    """One X.509 certificate, with the properties the ``Cert:`` provider shows."""

    der: bytes
    thumbprint: str
    subject: str
    issuer: str
    not_before: dt.datetime
    not_after: dt.datetime
    serial_number: str
    is_ca: bool

    @classmethod
    def from_der(cls, der: bytes) -> Certificate:
        """Parse DER (cached: a fleet imports the same bundle on every node)."""
        return _from_der(der)

    @classmethod
    def _parse(cls, der: bytes) -> Certificate:
        with warnings.catch_warnings():
            # A few roots of the public set (certifi's) have a negative serial number, which
            # cryptography 42+ reads with a warning every command would print; Windows loads them
            # all the same.
            warnings.filterwarnings("ignore", message=".*serial number.*", category=CryptographyDeprecationWarning)
            return cls._read(der)

    @classmethod
    def _read(cls, der: bytes) -> Certificate:
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError as exc:
            raise CertificateFormatError(f"not a DER certificate: {exc}") from exc
        try:
            constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
            is_ca = constraints.ca
        except x509.ExtensionNotFound:
            is_ca = False
        return cls(
            der=der,
            thumbprint=hashlib.sha1(der).hexdigest().upper(),
            subject=windows_name(cert.subject),
            issuer=windows_name(cert.issuer),
            not_before=cert.not_valid_before_utc,
            not_after=cert.not_valid_after_utc,
            serial_number=format(cert.serial_number, "X").rjust(2, "0"),
            is_ca=is_ca,
        )

    @classmethod
    def from_pem(cls, data: bytes) -> Certificate:
        """The first certificate of a PEM text."""
        blocks = pem_blocks(data)
        if not blocks:
            raise CertificateFormatError("no PEM certificate block found")
        return cls.from_der(blocks[0])

    @functools.cached_property
    def _pem(self) -> str:
        body = base64.b64encode(self.der).decode("ascii")
        lines = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
        return f"-----BEGIN CERTIFICATE-----\n{lines}\n-----END CERTIFICATE-----\n"

    def pem(self) -> str:
        """The certificate as PEM text (what ``openssl x509`` and .NET write)."""
        return self._pem


@functools.lru_cache(maxsize=4096)
def _from_der(der: bytes) -> Certificate:
    return Certificate._parse(der)


def pem_blocks(data: bytes) -> list[bytes]:
    """The DER bytes of every PEM certificate block in ``data``, in order."""
    blocks = []
    for match in _PEM_BLOCK.finditer(data):
        try:
            blocks.append(base64.b64decode(b"".join(match.group(1).split()), validate=True))
        except binascii.Error as exc:
            raise CertificateFormatError(f"corrupt PEM block: {exc}") from exc
    return blocks


def certificates_in_bundle(data: bytes) -> list[Certificate]:
    """Every certificate of a PEM bundle; raises if any block is not a certificate. The same
    bundle (a cluster's 150-certificate trust bundle, read again for every node) is parsed once."""
    return list(_parse_bundle(data))


@functools.lru_cache(maxsize=32)
def _parse_bundle(data: bytes) -> tuple[Certificate, ...]:
    return tuple(Certificate.from_der(der) for der in pem_blocks(data))
