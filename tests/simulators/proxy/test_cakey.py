"""The lab's mitmdump reads the CA key the lab made as mitmproxy would, only without the RSA check."""

from __future__ import annotations

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mitmproxy import certs

from proxyfleet.simulators.proxy import forkserver
from proxyfleet.simulators.proxy.cakey import load_lab_key, use_for_mitmproxy


@pytest.fixture(scope="module")
def ca_key_pem() -> bytes:
    return trustme.CA(key_type=trustme.KeyType.RSA).private_key_pem.bytes()


def _numbers(key: object) -> rsa.RSAPrivateNumbers:
    assert isinstance(key, rsa.RSAPrivateKey)
    return key.private_numbers()


def test_the_key_read_is_the_key_mitmproxy_reads(ca_key_pem: bytes) -> None:
    assert _numbers(load_lab_key(ca_key_pem, None)) == _numbers(serialization.load_pem_private_key(ca_key_pem, None))


def test_a_password_given_for_an_unencrypted_key_is_ignored_as_mitmproxy_does(ca_key_pem: bytes) -> None:
    assert _numbers(load_lab_key(ca_key_pem, b"passphrase")) == _numbers(load_lab_key(ca_key_pem, None))


def test_an_encrypted_key_needs_its_password(ca_key_pem: bytes) -> None:
    key = serialization.load_pem_private_key(ca_key_pem, None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"right"))
    assert _numbers(load_lab_key(encrypted, b"right")) == _numbers(key)
    with pytest.raises(ValueError):
        load_lab_key(encrypted, b"wrong")
    with pytest.raises(TypeError):
        load_lab_key(encrypted, None)


def test_what_is_not_a_key_still_fails() -> None:
    with pytest.raises(ValueError):
        load_lab_key(b"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", None)


def test_the_installed_mitmproxy_reads_its_ca_key_through_it(monkeypatch: pytest.MonkeyPatch,
                                                               ca_key_pem: bytes) -> None:
    # mitmproxy reads the key by this module-level name (its CertStore and TLS addon): were it
    # renamed, the lab's mitmdump would quietly go back to checking the key on every start.
    monkeypatch.setattr(certs, "load_pem_private_key", certs.load_pem_private_key)  # restored afterwards
    assert use_for_mitmproxy()
    assert certs.load_pem_private_key is load_lab_key
    assert _numbers(certs.load_pem_private_key(ca_key_pem, None)) == _numbers(load_lab_key(ca_key_pem, None))


def test_a_fresh_interpreter_runs_the_same_program() -> None:
    assert "run_mitmdump(sys.argv[1:])" in forkserver.FRESH
    compile(forkserver.FRESH, "<string>", "exec")
