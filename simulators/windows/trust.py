"""The Root store a freshly installed Windows Server starts with, and the public root set the
lab's cluster publishes as its system trust bundle.

- ``system_bundle_pem``: what OpenShift's injected ``trusted-ca`` bundle is built from — a real
  public root set (the Mozilla list ``certifi`` ships, 120 to 150 certificates) plus the lab's
  public CA, which signs every origin (DESIGN.md §5).
- ``windows_builtin_roots``: a Windows Server 2022 ``LocalMachine\\Root`` out of the box: a few
  dozen roots. Those Windows shares with the Mozilla list are the real certificates from that
  list (so a bundle and the store overlap, as on a real node); the Windows-only ones (Microsoft's
  own code-signing and timestamping roots, roots Mozilla has since removed) are stand-ins
  generated once per process with the same names — the simulator does not ship Microsoft's
  certificates. Windows also fetches further roots on demand through WinHTTP (AuthRoot); that is
  not modelled: a root the store lacks is simply untrusted.
"""

from __future__ import annotations

import datetime as dt
import functools

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.pki import public_roots

# Common names (or, without one, organisational units) of roots a Windows Server 2022 Root store
# holds out of the box that the Mozilla list also carries.
SHARED_WITH_MOZILLA = (
    "DigiCert Global Root G2", "DigiCert Global Root G3", "DigiCert Assured ID Root G2",
    "DigiCert Trusted Root G4", "ISRG Root X1", "USERTrust RSA Certification Authority",
    "USERTrust ECC Certification Authority", "COMODO RSA Certification Authority",
    "Go Daddy Root Certificate Authority - G2", "Starfield Root Certificate Authority - G2",
    "Amazon Root CA 1", "Certum Trusted Network CA", "QuoVadis Root CA 2 G3",
    "Microsoft RSA Root Certificate Authority 2017", "Microsoft ECC Root Certificate Authority 2017",
    "T-TeleSec GlobalRoot Class 3", "GTS Root R1", "IdenTrust Commercial Root CA 1",
    "SSL.com Root Certification Authority RSA", "GlobalSign Root CA - R3",
)
# Windows-only roots (Microsoft's own, or removed from Mozilla's list), as generated stand-ins.
WINDOWS_ONLY = (
    ("Microsoft Root Certificate Authority 2010", "Microsoft Corporation"),
    ("Microsoft Root Certificate Authority 2011", "Microsoft Corporation"),
    ("Microsoft Root Authority", "Microsoft Corporation"),
    ("Microsoft Authenticode(tm) Root Authority", "MSFT"),
    ("Copyright (c) 1997 Microsoft Corp.", "Microsoft Corporation"),
    ("Microsoft Time Stamp Root Certificate Authority 2014", "Microsoft Corporation"),
    ("Symantec Enterprise Mobile Root for Microsoft", "Symantec Corporation"),
    ("DigiCert Global Root CA", "DigiCert Inc"),
    ("DigiCert High Assurance EV Root CA", "DigiCert Inc"),
    ("Baltimore CyberTrust Root", "Baltimore"),
)


def _names(certificate: Certificate) -> set[str]:
    """The subject's common and organisational-unit names."""
    return {part[3:] for part in certificate.subject.split(", ") if part.startswith(("CN=", "OU="))}


def _stand_in(common_name: str, organization: str) -> Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)])
    start = dt.datetime(2010, 6, 23, tzinfo=dt.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(start + dt.timedelta(days=365 * 25))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    return Certificate.from_der(certificate.public_bytes(serialization.Encoding.DER))


@functools.cache
def windows_builtin_roots() -> tuple[Certificate, ...]:
    """The out-of-the-box ``LocalMachine\\Root`` (without the lab's public CA), one set per process."""
    shared = tuple(c for c in public_roots() if _names(c) & set(SHARED_WITH_MOZILLA))
    return shared + tuple(_stand_in(name, organization) for name, organization in WINDOWS_ONLY)
