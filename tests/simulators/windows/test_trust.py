"""Windows' own out-of-the-box Root store: some of Mozilla's roots and Microsoft's own."""

from __future__ import annotations

from proxyfleet.simulators.pki import public_roots
from proxyfleet.simulators.windows.trust import windows_builtin_roots


def test_windows_roots_include_microsoft_ones_and_are_stable_per_process() -> None:
    roots = windows_builtin_roots()
    assert any("Microsoft Root Certificate Authority 2011" in c.subject for c in roots)
    assert roots is windows_builtin_roots()
    assert {c.thumbprint for c in roots} - {c.thumbprint for c in public_roots()}  # not just Mozilla's
