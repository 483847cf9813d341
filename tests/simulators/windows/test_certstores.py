"""A certificate store's contents and its removal history (pure)."""

import trustme

from proxyfleet.core.certificates import Certificate
from proxyfleet.simulators.windows.certstores import CertStore


def test_removals_are_remembered_in_order_even_when_the_certificate_comes_back() -> None:
    first = Certificate.from_pem(trustme.CA().cert_pem.bytes())
    second = Certificate.from_pem(trustme.CA().cert_pem.bytes())
    store = CertStore("LocalMachine", "Root")
    assert store.add(first) and store.add(second) and not store.add(first)  # Windows keeps one
    assert store.remove(first.thumbprint.lower())  # thumbprints match in any case
    assert not store.remove(first.thumbprint)  # nothing left to remove: not a removal
    assert store.add(first) and store.remove(second.thumbprint)
    assert store.thumbprints() == [first.thumbprint]
    assert store.removed == [first.thumbprint, second.thumbprint]
