"""Certificate stores as Windows' ``Cert:`` drive shows them, and what ``Import-Certificate``
reads from a file. Stores are keyed by SHA-1 thumbprint."""

from __future__ import annotations

from dataclasses import dataclass, field

from proxyfleet.core.certificates import Certificate, CertificateFormatError, pem_blocks

# The stores a Windows Server 2022 machine has under Cert:\LocalMachine and Cert:\CurrentUser.
STORE_NAMES = ("Root", "CA", "My", "AuthRoot", "TrustedPublisher", "TrustedPeople", "Disallowed")
STORE_LOCATIONS = ("LocalMachine", "CurrentUser")


def certificate_from_file(data: bytes) -> Certificate:
    """What ``Import-Certificate`` reads from a file.

    A DER file holds one certificate. A PEM (Base-64) file is read like Windows'
    ``CryptQueryObject`` does: only the first certificate is taken, the rest of a bundle is
    silently ignored — a real trap for code that imports a whole bundle with one call.
    """
    if data.lstrip().startswith(b"-----BEGIN"):
        blocks = pem_blocks(data)
        if not blocks:
            raise CertificateFormatError("no certificate in PEM file")
        return Certificate.from_der(blocks[0])
    return Certificate.from_der(data)


@dataclass
class CertStore:
    """One store, e.g. ``Cert:\\LocalMachine\\Root``."""

    location: str
    name: str
    certificates: dict[str, Certificate] = field(default_factory=dict)
    # Every removal, in order (thumbprints): a certificate removed and imported again between two
    # looks is gone from the final state's view, not from what clients met meanwhile.
    removed: list[str] = field(default_factory=list)

    def add(self, certificate: Certificate) -> bool:
        """Add a certificate; returns False if it was already present (Windows keeps one)."""
        if certificate.thumbprint in self.certificates:
            return False
        self.certificates[certificate.thumbprint] = certificate
        return True

    def remove(self, thumbprint: str) -> bool:
        if self.certificates.pop(thumbprint.upper(), None) is None:
            return False
        self.removed.append(thumbprint.upper())
        return True

    def get(self, thumbprint: str) -> Certificate | None:
        return self.certificates.get(thumbprint.upper())

    def thumbprints(self) -> list[str]:
        return sorted(self.certificates)


@dataclass
class CertStores:
    """All stores of a machine, addressed case-insensitively by location and name."""

    stores: dict[tuple[str, str], CertStore] = field(default_factory=dict)

    @classmethod
    def standard(cls) -> CertStores:
        stores = cls()
        for location in STORE_LOCATIONS:
            for name in STORE_NAMES:
                stores.stores[(location.lower(), name.lower())] = CertStore(location, name)
        return stores

    def get(self, location: str, name: str) -> CertStore | None:
        return self.stores.get((location.lower(), name.lower()))

    @property
    def machine_root(self) -> CertStore:
        store = self.get("LocalMachine", "Root")
        assert store is not None
        return store

    def in_location(self, location: str) -> list[CertStore]:
        return [store for (loc, _), store in self.stores.items() if loc == location.lower()]
