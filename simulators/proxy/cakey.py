"""The lab's mitmdump reads its CA key without cryptography's RSA key check.

mitmproxy reads ``mitmproxy-ca.pem`` twice as it starts (its TLS addon's ``configure`` and again
in ``running``) with ``cryptography``'s ``load_pem_private_key``, which checks an RSA key's
primes (OpenSSL's ``RSA_check_key``) every time: ~40 ms each, 15 % of a lab mitmdump's CPU over a
10-node run and most of a forked start's 0.11 s. The key is always one the lab made a moment before
(a ``trustme`` CA, written by ``ProxyServer``), so the check proves nothing here; cryptography
offers ``unsafe_skip_rsa_key_validation`` for exactly such keys. A vendor's proxy never runs
through this (only the lab's mitmdump does), and a key that is not PEM or not a key still fails
as before.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization

__all__ = ["load_lab_key", "use_for_mitmproxy"]


def load_lab_key(data: bytes, password: bytes | None) -> Any:
    """``mitmproxy.certs.load_pem_private_key`` for a key the lab made: the same result (an
    unencrypted key read even when a password is given, as mitmproxy does), without the RSA check."""
    try:
        return serialization.load_pem_private_key(data, password, unsafe_skip_rsa_key_validation=True)
    except TypeError:
        if password is not None:  # mitmproxy's own fallback: the key is not encrypted
            return load_lab_key(data, None)
        raise


def use_for_mitmproxy() -> bool:
    """Make this process's mitmproxy read its CA key with ``load_lab_key``; False (nothing changed:
    the key is read, and checked, as before) where mitmproxy reads it some other way."""
    from mitmproxy import certs

    if not callable(getattr(certs, "load_pem_private_key", None)):
        return False
    certs.load_pem_private_key = load_lab_key
    return True
