"""The lab's certificate authorities, all from trustme.

* the *public* CA signs the origins' certificates; every node trusts it as a built-in root and
  the proxy trusts it upstream (it plays the public web PKI);
* the proxy's *MITM* CA (RSA, because mitmproxy reuses the CA key for the leaves it forges) is
  trusted by a node only after the reconciler imports it;
* the *cluster* CA signs the API server's certificate (see proxyfleet.simulators.controlplane.cluster).
"""

from __future__ import annotations

from pathlib import Path

import trustme


def new_public_ca() -> trustme.CA:
    return trustme.CA(organization_name="proxyfleet public roots")


def new_mitm_ca(name: str = "proxyfleet corporate proxy") -> trustme.CA:
    return trustme.CA(organization_name=name, key_type=trustme.KeyType.RSA)


def write_certificate(ca: trustme.CA, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ca.cert_pem.bytes())
    return path
