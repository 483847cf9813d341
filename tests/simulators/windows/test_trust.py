"""The trust material a lab starts from: the public root set (~150 certificates, as certifi ships
Mozilla's list) and Windows' own out-of-the-box Root store."""

from __future__ import annotations

import trustme

from proxyfleet.core.certificates import certificates_in_bundle
from proxyfleet.simulators.windows.trust import public_roots, system_bundle_pem, windows_builtin_roots


def test_the_public_root_set_is_production_sized() -> None:
    assert 100 <= len(public_roots()) <= 250  # certifi: ~120-150 over the years
    assert all(c.is_ca for c in public_roots())


def test_the_system_bundle_adds_the_lab_public_ca() -> None:
    ca = trustme.CA().cert_pem.bytes().decode()
    bundle = certificates_in_bundle(system_bundle_pem(ca).encode())
    assert len(bundle) == len(public_roots()) + 1


def test_windows_roots_include_microsoft_ones_and_are_stable_per_process() -> None:
    roots = windows_builtin_roots()
    assert any("Microsoft Root Certificate Authority 2011" in c.subject for c in roots)
    assert roots is windows_builtin_roots()
    assert {c.thumbprint for c in roots} - {c.thumbprint for c in public_roots()}  # not just Mozilla's
